#include "model/layer_math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "bonsai/core/formats.hpp"

namespace bonsai::host {

std::vector<float> dequantize_vector(const TensorView &tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.n_elements()));
  dequantize_row(tensor.type, tensor.data, values.data(), tensor.n_elements());
  return values;
}

void rms_norm(const float *v, const float *weight, int64_t n, float eps, float *out) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum_sq += static_cast<double>(v[i]) * v[i];
  const auto scale = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i)
    out[i] = v[i] * scale * weight[i];
}

void rope_neox(float *head, int32_t pos, std::span<const double> rates, double magnitude) {
  const size_t half = rates.size();
  for (size_t i = 0; i < half; ++i) {
    // The angle in double: pos * rate reaches thousands of radians, where f32
    // would lose the low bits the reference keeps.
    const double angle = static_cast<double>(pos) * rates[i];
    const auto c = static_cast<float>(magnitude * std::cos(angle));
    const auto s = static_cast<float>(magnitude * std::sin(angle));
    const float a = head[i];
    const float b = head[i + half];
    head[i] = a * c - b * s;
    head[i + half] = a * s + b * c;
  }
}

void norm_and_rotate(float *heads, int32_t n_heads, int32_t pos, const HeadsRotation &how) {
  for (int32_t h = 0; h < n_heads; ++h) {
    float *head = heads + static_cast<int64_t>(h) * how.head_dim;
    rms_norm(head, how.norm, how.head_dim, how.eps, head);
    rope_neox(head, pos, how.rates, how.magnitude);
  }
}

void attend(const HeadAttention &head, float *scores, float *out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head.head_dim));
  float max_score = -std::numeric_limits<float>::infinity();
  for (int32_t p = 0; p < head.n_visible; ++p) {
    const float *k = head.keys + p * head.stride;
    float dot = 0.0f;
    for (int32_t i = 0; i < head.head_dim; ++i)
      dot += head.query[i] * k[i];
    scores[p] = dot * scale;
    max_score = std::max(max_score, scores[p]);
  }
  double total = 0.0;
  for (int32_t p = 0; p < head.n_visible; ++p) {
    scores[p] = std::exp(scores[p] - max_score);
    total += scores[p];
  }
  std::fill(out, out + head.head_dim, 0.0f);
  const auto inv_total = static_cast<float>(1.0 / total);
  for (int32_t p = 0; p < head.n_visible; ++p) {
    const float weight = scores[p] * inv_total;
    const float *v = head.values + p * head.stride;
    for (int32_t i = 0; i < head.head_dim; ++i)
      out[i] += weight * v[i];
  }
}

} // namespace bonsai::host
