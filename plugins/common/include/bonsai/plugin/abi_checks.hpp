#pragma once
// Argument checks every plugin applies the same way, so the answers to bad
// input do not drift between plugins. Each throws PluginError
// (INVALID_ARGUMENT) with a message naming the call and the value.
#include <cmath>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/plugin_error.hpp"

namespace bonsai::plugin {

// matmul(): 1 <= n_tokens <= max_batch, x and y present. The weight handle
// is the plugin's to look up.
inline void check_matmul_desc(const bonsai_matmul_desc &d, int max_batch) {
  if (d.n_tokens < 1 || d.n_tokens > max_batch)
    fail_invalid(strformat("matmul: n_tokens is %d; it must be in 1..max_batch (%d)", d.n_tokens,
                           max_batch));
  if (d.x == nullptr || d.y == nullptr)
    fail_invalid("matmul: x and y must not be NULL");
}

// bind_model(): the scalars and pointers of the description (shapes against
// the weights are the plugin's to check).
inline void check_model_desc(const bonsai_model_desc &d) {
  if (d.n_embd < 1 || d.n_layer < 1 || d.n_head < 1 || d.n_head_kv < 1 || d.head_dim < 1 ||
      d.n_ff < 1 || d.n_vocab < 1)
    fail_invalid(strformat("bind_model: dimensions must be positive (n_embd %d, n_layer %d, "
                           "n_head %d, n_head_kv %d, head_dim %d, n_ff %d, n_vocab %d)",
                           d.n_embd, d.n_layer, d.n_head, d.n_head_kv, d.head_dim, d.n_ff,
                           d.n_vocab));
  if (d.n_head % d.n_head_kv != 0)
    fail_invalid(strformat("bind_model: n_head %d is not a multiple of n_head_kv %d", d.n_head,
                           d.n_head_kv));
  if (d.head_dim % 2 != 0)
    fail_invalid(strformat("bind_model: head_dim %d must be even for RoPE", d.head_dim));
  if (!(d.rms_eps > 0.0f) || !std::isfinite(d.rms_eps))
    fail_invalid(strformat("bind_model: rms_eps %g must be a positive finite number",
                           static_cast<double>(d.rms_eps)));
  if (!(d.rope_freq_base > 0.0f) || !std::isfinite(d.rope_freq_base))
    fail_invalid(strformat("bind_model: rope_freq_base %g must be a positive finite number",
                           static_cast<double>(d.rope_freq_base)));
  if (d.token_embd == nullptr || d.output_norm == nullptr || d.lm_head == nullptr)
    fail_invalid("bind_model: token_embd, output_norm and lm_head must not be NULL");
  if (d.layers == nullptr)
    fail_invalid("bind_model: layers is NULL");
  if (d.layers[0].struct_size < sizeof(bonsai_layer_weights))
    fail_invalid(strformat("bind_model: layers[0].struct_size is %u, smaller than ABI 1.0's %zu",
                           d.layers[0].struct_size, sizeof(bonsai_layer_weights)));
}

// lm_head(): a range within the open step's tokens and something to compute.
inline void check_lm_head_desc(const bonsai_lm_head_desc &d, int step_tokens) {
  if (d.first_token < 0 || d.n_outputs < 1 ||
      static_cast<int64_t>(d.first_token) + d.n_outputs > step_tokens)
    fail_invalid(strformat("lm_head: tokens [%d, %d + %d) are not within the step's %d tokens",
                           d.first_token, d.first_token, d.n_outputs, step_tokens));
  if (d.logits == nullptr && d.argmax == nullptr)
    fail_invalid("lm_head: both logits and argmax are NULL; nothing to compute");
}

// hidden_states: the tokens lie within the step's and there is somewhere to
// write them.
inline void check_hidden_states_desc(const bonsai_hidden_states_desc &d, int step_tokens) {
  if (d.first_token < 0 || d.n_outputs < 1 ||
      static_cast<int64_t>(d.first_token) + d.n_outputs > step_tokens)
    fail_invalid(
        strformat("hidden_states: tokens [%d, %d + %d) are not within the step's %d tokens",
                  d.first_token, d.first_token, d.n_outputs, step_tokens));
  if (d.hidden == nullptr)
    fail_invalid("hidden_states: hidden is NULL");
}

} // namespace bonsai::plugin
