#include "bonsai/core/delta_net.hpp"

#include <cmath>
#include <cstring>

namespace bonsai {
namespace {

float silu(float v) {
  return v / (1.0f + std::exp(-v));
}

float softplus(float v) {
  return v > 20.0f ? v : std::log1p(std::exp(v));
}

// v / sqrt(sum(v^2) + eps): the epsilon goes on the sum, not the mean.
void l2_norm(float *v, int32_t n, float eps) {
  double sum_sq = 0.0;
  for (int32_t i = 0; i < n; ++i)
    sum_sq += static_cast<double>(v[i]) * v[i];
  const auto scale = static_cast<float>(1.0 / std::sqrt(sum_sq + eps));
  for (int32_t i = 0; i < n; ++i)
    v[i] *= scale;
}

// One token of a conv run (DeltaNetConvRun, one row each).
struct DeltaNetConvToken {
  const float *taps = nullptr;
  const float *window_in = nullptr;
  float *window_out = nullptr;
  const float *mix = nullptr;
  float *act = nullptr;
};

void delta_net_conv_token(const DeltaNetShape &shape, const DeltaNetConvToken &token) {
  const auto C = static_cast<size_t>(shape.conv_dim());
  const auto K = static_cast<size_t>(shape.conv_kernel);
  for (size_t ch = 0; ch < C; ++ch) {
    const float *taps = token.taps + ch * K;
    float y = taps[K - 1] * token.mix[ch];
    for (size_t i = 0; i + 1 < K; ++i)
      y += taps[i] * token.window_in[i * C + ch];
    token.act[ch] = silu(y);
  }
  if (K > 1) {
    std::memmove(token.window_out, token.window_in + C, (K - 2) * C * sizeof(float));
    std::memcpy(token.window_out + (K - 2) * C, token.mix, C * sizeof(float));
  }
  for (int32_t head = 0; head < 2 * shape.n_k_heads; ++head) // q heads, then k heads
    l2_norm(token.act + static_cast<size_t>(head) * shape.head_dim, shape.head_dim, shape.eps);
}

void delta_net_gates(const DeltaNetShape &shape, const float *dt_bias, const float *a, float *beta,
                     float *decay) {
  for (int32_t h = 0; h < shape.n_v_heads; ++h) {
    beta[h] = 1.0f / (1.0f + std::exp(-beta[h]));
    decay[h] = std::exp(softplus(decay[h] + dt_bias[h]) * a[h]);
  }
}

// One token of a delta-rule run for one head.
struct DeltaRuleStep {
  const float *state_in = nullptr;
  float *state_out = nullptr;
  const float *q = nullptr;
  const float *k = nullptr;
  const float *v = nullptr;
  float beta = 0.0f;
  float decay = 1.0f;
  int32_t d = 0;
  float *scratch = nullptr;
  float *out = nullptr;
};

// Two passes over the state: read S^T k (the decay folded in), then write the
// updated state while reading S'^T q. The inner loops run over the value index
// j, so they vectorize; target_clones gives each x86 level its own copy.
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void delta_rule_step(const DeltaRuleStep &step) {
  const int32_t d = step.d;
  float *delta = step.scratch;
  float *out = step.out;
  for (int32_t j = 0; j < d; ++j)
    delta[j] = 0.0f;
  for (int32_t i = 0; i < d; ++i) {
    const float *row = step.state_in + static_cast<int64_t>(i) * d;
    const float ki = step.k[i];
    for (int32_t j = 0; j < d; ++j)
      delta[j] += (row[j] * step.decay) * ki;
  }
  for (int32_t j = 0; j < d; ++j) {
    delta[j] = step.beta * (step.v[j] - delta[j]);
    out[j] = 0.0f;
  }
  for (int32_t i = 0; i < d; ++i) {
    const float *row_in = step.state_in + static_cast<int64_t>(i) * d;
    float *row_out = step.state_out + static_cast<int64_t>(i) * d;
    const float ki = step.k[i];
    const float qi = step.q[i];
    for (int32_t j = 0; j < d; ++j) {
      const float s = row_in[j] * step.decay + ki * delta[j];
      row_out[j] = s;
      out[j] += s * qi;
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int32_t j = 0; j < d; ++j)
    out[j] *= scale;
}

} // namespace

void delta_net_conv_run(const DeltaNetShape &shape, const DeltaNetConvRun &run) {
  const auto C = static_cast<size_t>(shape.conv_dim());
  const auto H = static_cast<size_t>(shape.n_v_heads);
  for (size_t t = 0; t < static_cast<size_t>(run.n_tokens); ++t) {
    DeltaNetConvToken token;
    token.taps = run.taps;
    token.window_in = t == 0 ? run.window_in : run.window_out;
    token.window_out = run.window_out;
    token.mix = run.mix + t * C;
    token.act = run.act + t * C;
    delta_net_conv_token(shape, token);
    delta_net_gates(shape, run.dt_bias, run.a, run.beta + t * H, run.decay + t * H);
  }
}

void delta_rule_run(const DeltaNetShape &shape, const DeltaRuleRun &run) {
  const int32_t d = shape.head_dim;
  const auto C = static_cast<size_t>(shape.conv_dim());
  const auto H = static_cast<size_t>(shape.n_v_heads);
  const int32_t kh = run.head % shape.n_k_heads;
  for (size_t t = 0; t < static_cast<size_t>(run.n_tokens); ++t) {
    const float *act = run.act + t * C;
    DeltaRuleStep step;
    step.state_in = t == 0 ? run.state_in : run.state_out;
    step.state_out = run.state_out;
    step.q = act + kh * d;
    step.k = act + shape.key_dim() + kh * d;
    step.v = act + 2 * shape.key_dim() + run.head * d;
    step.beta = run.beta[t * H + static_cast<size_t>(run.head)];
    step.decay = run.decay[t * H + static_cast<size_t>(run.head)];
    step.d = d;
    step.scratch = run.scratch;
    step.out =
        run.out + t * static_cast<size_t>(shape.value_dim()) + static_cast<size_t>(run.head) * d;
    delta_rule_step(step);
  }
}

void delta_net_gated_norm(const DeltaNetShape &shape, const float *norm, const float *z, float *o) {
  const int32_t d = shape.head_dim;
  for (int32_t h = 0; h < shape.n_v_heads; ++h) {
    float *oh = o + static_cast<int64_t>(h) * d;
    const float *zh = z + static_cast<int64_t>(h) * d;
    double sum_sq = 0.0;
    for (int32_t i = 0; i < d; ++i)
      sum_sq += static_cast<double>(oh[i]) * oh[i];
    const auto scale = static_cast<float>(1.0 / std::sqrt(sum_sq / d + shape.eps));
    for (int32_t i = 0; i < d; ++i)
      oh[i] = oh[i] * scale * norm[i] * silu(zh[i]);
  }
}

} // namespace bonsai
