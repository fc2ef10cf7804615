#pragma once
// The f32 pieces of a layer that the host computes itself when it runs the
// layers through a plugin's matmul (MatmulLayerRunner for qwen3,
// HybridLayerRunner for qwen35): norms, rotations, activations, attention.
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "bonsai/core/model_spec.hpp"

namespace bonsai::host {

// A float tensor (norm weight, conv taps, ...) as f32 values.
std::vector<float> dequantize_vector(const TensorView &tensor);

// out = v / sqrt(mean(v^2) + eps) * weight, for one vector of n values
// (the sum of squares in double, as the reference does). out may alias v.
void rms_norm(const float *v, const float *weight, int64_t n, float eps, float *out);

// NeoX RoPE on the first 2 * rates.size() values of a head: pair (i, i + half)
// turns by pos * rates[i]; the rest of the head is left alone.
void rope_neox(float *head, int32_t pos, std::span<const double> rates, double magnitude);

inline float silu(float v) {
  return v / (1.0f + std::exp(-v));
}
inline float sigmoid(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}

// Per-head RMSNorm (one weight for every head) then NeoX RoPE, for n_heads
// consecutive heads of head_dim values: the Q/K path of both architectures.
struct HeadsRotation {
  const float *norm = nullptr; // head_dim weights
  int32_t head_dim = 0;
  float eps = 0.0f;
  std::span<const double> rates; // RoPE rate per rotated pair
  double magnitude = 1.0;
};
void norm_and_rotate(float *heads, int32_t n_heads, int32_t pos, const HeadsRotation &how);

// Causal attention of one query head over n_visible cached positions of its
// KV head: keys/values point at that head's values of position 0, rows
// `stride` floats apart. scores holds n_visible floats of scratch.
struct HeadAttention {
  const float *query = nullptr;
  const float *keys = nullptr;
  const float *values = nullptr;
  int32_t n_visible = 0;
  int32_t head_dim = 0;
  int64_t stride = 0;
};
void attend(const HeadAttention &head, float *scores, float *out);

} // namespace bonsai::host
