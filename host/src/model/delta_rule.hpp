#pragma once
// One token of the gated delta rule for one value head of a qwen35 gated
// DeltaNet layer (docs/models.md): the hot loop of the host's qwen35 runner,
// compiled for AVX-512, AVX2 and plain x86-64 and chosen at load time.
#include <cstdint>

namespace bonsai::host {

struct DeltaRuleStep {
  float *state = nullptr;   // d x d, [key i][value j], updated in place
  const float *q = nullptr; // d (L2-normed)
  const float *k = nullptr; // d (L2-normed)
  const float *v = nullptr; // d
  float beta = 0.0f;        // write strength, sigmoid of its logit
  float decay = 1.0f;       // e^g, in (0, 1]
  int32_t d = 0;            // head size
  float *scratch = nullptr; // d floats
  float *out = nullptr;     // d: S^T q / sqrt(d) after the update
};

// S <- decay S; S += k (beta (v - S^T k))^T; out = S^T q / sqrt(d).
void delta_rule_step(const DeltaRuleStep &step);

} // namespace bonsai::host
