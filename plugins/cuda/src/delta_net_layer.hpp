#pragma once
// A gated DeltaNet layer's mixer on the GPU (qwen35, ABI 1.2 layer kinds).
#include <vector>

#include "context.hpp"

namespace bonsai::cuda {

// x += out(gated norm(delta rule(conv(qkv RMSNorm(x))))) for the step's n
// rows: the projections over every token, the conv and the rule per
// sequence, reading each slot's current state copy and writing the other
// (end_step makes it current). Only launches.
void delta_net_mixer(const Context &ctx, const BoundModel &m, const LayerBinding &layer, int n,
                     const std::vector<StepSequence> &sequences);

} // namespace bonsai::cuda
