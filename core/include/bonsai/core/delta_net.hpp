#pragma once
// The per-token math of a qwen35 gated DeltaNet layer (docs/models.md) in
// f32, shared by the host's own qwen35 runner and the CPU plugin's layers so
// both compute the same function the same way. Everything here works on one
// token of one sequence; callers own the buffers and the threading.
#include <cstdint>

namespace bonsai {

struct DeltaNetShape {
  int32_t conv_kernel = 0; // K
  int32_t n_k_heads = 0;   // H_k
  int32_t n_v_heads = 0;   // H_v
  int32_t head_dim = 0;    // d
  float eps = 0.0f;        // of the q/k L2 norms and the output RMSNorm

  int32_t key_dim() const { return n_k_heads * head_dim; }
  int32_t value_dim() const { return n_v_heads * head_dim; }
  int32_t conv_dim() const { return 2 * key_dim() + value_dim(); } // q | k | v channels
  // Floats of one layer's conv window, (K - 1) x conv_dim, oldest first.
  int64_t window_floats() const { return int64_t{conv_kernel - 1} * conv_dim(); }
  // Floats of one layer's states: H_v x d x d.
  int64_t state_floats() const { return int64_t{n_v_heads} * head_dim * head_dim; }
};

// A run of consecutive tokens of one sequence through a layer's causal conv
// and gates. Token t: act[t][c] = SiLU(taps[c][K-1] mix[t][c] + sum_i
// taps[c][i] window[i][c]) over the window the token before left, then each
// q and k head of act[t] divided by sqrt(sum of squares + eps); beta[t] <-
// sigmoid(beta[t]) and decay[t] <- e^g with g = softplus(decay[t] + dt_bias)
// * a, in place (decay lands in (0, 1]). The first token reads window_in,
// which may equal window_out; window_out ends as the window after the run.
struct DeltaNetConvRun {
  int32_t n_tokens = 0;
  const float *taps = nullptr;      // [conv_dim][K]
  const float *dt_bias = nullptr;   // H_v
  const float *a = nullptr;         // H_v
  const float *window_in = nullptr; // [K - 1][conv_dim], oldest first
  float *window_out = nullptr;      // [K - 1][conv_dim]
  const float *mix = nullptr;       // [n_tokens][conv_dim]: the qkv projection
  float *act = nullptr;             // [n_tokens][conv_dim] out: q | k | v
  float *beta = nullptr;            // [n_tokens][H_v]: logits in, write strengths out
  float *decay = nullptr;           // [n_tokens][H_v]: alpha logits in, e^g out
};
void delta_net_conv_run(const DeltaNetShape &shape, const DeltaNetConvRun &run);

// The gated delta rule for one value head over a run of consecutive tokens:
// per token S' = decay S + k (beta (v - decay S^T k))^T and out = S'^T q /
// sqrt(d), with q and k of q/k head `head` mod H_k. The first token reads
// state_in, which may equal state_out (in place) or be another buffer, so a
// caller can leave the old state untouched until it commits the new one.
struct DeltaRuleRun {
  int32_t head = 0;
  int32_t n_tokens = 0;
  const float *act = nullptr;      // [n_tokens][conv_dim]: q | k | v after the conv
  const float *beta = nullptr;     // [n_tokens][H_v]
  const float *decay = nullptr;    // [n_tokens][H_v]
  const float *state_in = nullptr; // d x d, [key i][value j]
  float *state_out = nullptr;      // d x d
  float *scratch = nullptr;        // d floats of this head's own
  float *out = nullptr;            // [n_tokens][value_dim]: this head's d values written
};
void delta_rule_run(const DeltaNetShape &shape, const DeltaRuleRun &run);

// One token's output before the projection, in place for every value head:
// o_h = RMSNorm(o_h) * norm * SiLU(z_h).
void delta_net_gated_norm(const DeltaNetShape &shape, const float *norm, const float *z, float *o);

} // namespace bonsai
