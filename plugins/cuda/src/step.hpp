#pragma once
// The step protocol (docs/abi.md) on the GPU: begin_step (slot 0) or
// begin_batch (several slots), the layers, the LM head, end_step.
#include "bonsai/bonsai_backend.h"
#include "context.hpp"

namespace bonsai::cuda {

void step_begin(Context &ctx, const bonsai_step_desc &step);
void step_begin_batch(Context &ctx, const bonsai_batch_step_desc &batch);
void step_encode_layer(Context &ctx, int layer);
void step_lm_head(Context &ctx, const bonsai_lm_head_desc &desc);
void step_hidden_states(Context &ctx, const bonsai_hidden_states_desc &desc);
void step_end(Context &ctx);

} // namespace bonsai::cuda
