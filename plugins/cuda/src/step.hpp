#pragma once
// The step protocol (docs/abi.md) on the GPU.
#include "bonsai/bonsai_backend.h"
#include "context.hpp"

namespace bonsai::cuda {

void step_begin(Context &ctx, const bonsai_step_desc &step);
void step_encode_layer(Context &ctx, int layer);
void step_lm_head(Context &ctx, const bonsai_lm_head_desc &desc);
void step_end(Context &ctx);
void kv_reset(Context &ctx);
void kv_truncate(Context &ctx, int n_keep);
int kv_length(const Context &ctx);

} // namespace bonsai::cuda
