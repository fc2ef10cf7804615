#pragma once
// The step protocol: argument checks and state transitions around the math
// in forward.cpp. Every function throws PluginError.
#include <cstdint>

#include "context.hpp"
#include "slots.hpp"

namespace bonsai::cpu {

void step_begin(Context &ctx, const bonsai_step_desc &desc);
void step_begin_batch(Context &ctx, const bonsai_batch_step_desc &batch);
void step_encode_layer(Context &ctx, int32_t layer);
void step_lm_head(Context &ctx, const bonsai_lm_head_desc &desc);
void step_hidden_states(Context &ctx, const bonsai_hidden_states_desc &desc);
void step_end(Context &ctx);

} // namespace bonsai::cpu
