#include "model/delta_rule.hpp"

#include <cmath>

namespace bonsai::host {

// Two passes over the state: decay while reading S^T k, then the rank-1
// update while reading S^T q. The inner loops run over the value index j, so
// they vectorize; target_clones gives each x86 level its own copy.
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
    float *row = step.state + static_cast<int64_t>(i) * d;
    const float ki = step.k[i];
    for (int32_t j = 0; j < d; ++j) {
      row[j] *= step.decay;
      delta[j] += row[j] * ki;
    }
  }
  for (int32_t j = 0; j < d; ++j) {
    delta[j] = step.beta * (step.v[j] - delta[j]);
    out[j] = 0.0f;
  }
  for (int32_t i = 0; i < d; ++i) {
    float *row = step.state + static_cast<int64_t>(i) * d;
    const float ki = step.k[i];
    const float qi = step.q[i];
    for (int32_t j = 0; j < d; ++j) {
      row[j] += ki * delta[j];
      out[j] += row[j] * qi;
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int32_t j = 0; j < d; ++j)
    out[j] *= scale;
}

} // namespace bonsai::host
