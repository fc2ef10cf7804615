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

// One token's causal conv: act[c] = SiLU(taps[c][K-1] mix[c] + sum_i
// taps[c][i] window_in[i][c]), then each q and k head of act divided by
// sqrt(sum of squares + eps). window_out (may equal window_in) gets the
// window moved on by one with `mix` as its newest row.
struct DeltaNetConvToken {
  const float *taps = nullptr;      // [conv_dim][K]
  const float *window_in = nullptr; // [K - 1][conv_dim]
  float *window_out = nullptr;      // [K - 1][conv_dim]
  const float *mix = nullptr;       // conv_dim: this token's qkv projection
  float *act = nullptr;             // conv_dim out: q | k | v
};
void delta_net_conv_token(const DeltaNetShape &shape, const DeltaNetConvToken &token);

// In place for one token's H_v heads: beta <- sigmoid(beta) and decay <-
// e^g with g = softplus(decay + dt_bias) * a (so decay is in (0, 1]).
void delta_net_gates(const DeltaNetShape &shape, const float *dt_bias, const float *a, float *beta,
                     float *decay);

// One token of the gated delta rule for one value head:
// S' = decay S + k (beta (v - decay S^T k))^T; out = S'^T q / sqrt(d).
// state_out may equal state_in (in place) or be another d x d buffer, so a
// caller can leave the old state untouched until it commits the new one.
struct DeltaRuleStep {
  const float *state_in = nullptr; // d x d, [key i][value j]
  float *state_out = nullptr;      // d x d
  const float *q = nullptr;        // d (L2-normed)
  const float *k = nullptr;        // d (L2-normed)
  const float *v = nullptr;        // d
  float beta = 0.0f;               // write strength
  float decay = 1.0f;              // e^g
  int32_t d = 0;                   // head size
  float *scratch = nullptr;        // d floats
  float *out = nullptr;            // d
};
void delta_rule_step(const DeltaRuleStep &step);

// One token's output before the projection, in place for every value head:
// o_h = RMSNorm(o_h) * norm * SiLU(z_h).
void delta_net_gated_norm(const DeltaNetShape &shape, const float *norm, const float *z, float *o);

} // namespace bonsai
