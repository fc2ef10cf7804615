#pragma once
// The step protocol and KV control: argument checks and state transitions
// around the math in forward.cpp. Every function throws PluginError.
#include <cstdint>

#include "context.hpp"

namespace bonsai::cpu {

void step_begin(Context &ctx, const bonsai_step_desc &step);
void step_encode_layer(Context &ctx, int32_t layer);
void step_lm_head(Context &ctx, const bonsai_lm_head_desc &desc);
void step_end(Context &ctx);

void kv_reset(Context &ctx);
void kv_truncate(Context &ctx, int32_t n_keep);
int32_t kv_length(const Context &ctx);

} // namespace bonsai::cpu
