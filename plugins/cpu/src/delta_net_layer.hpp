#pragma once
// A gated DeltaNet layer's mixer (qwen35, ABI 1.2) on the open step.
#include "context.hpp"

namespace bonsai::cpu {

// Runs the mixer on the normed rows in b.h and leaves its projected output
// in b.h. Each sequence reads its slot's current recurrent state and writes
// the other copy, which end_step makes current.
void delta_net_mixer(Context &ctx, const LayerBinding &l);

} // namespace bonsai::cpu
