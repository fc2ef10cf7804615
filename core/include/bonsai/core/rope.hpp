#pragma once
// RoPE frequencies as llama.cpp computes them, with its context-extension
// scalings: none, linear (positions divided by the factor) and YaRN
// (frequencies blended between the original and the interpolated ones, cos
// and sin scaled by 1 + 0.1 ln(factor)). Precomputed once per model: the
// kernels rotate pair i of a head by pos * inv_freq[i] and multiply cos/sin
// by the magnitude scale.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai {

enum class RopeScalingType { None, Linear, Yarn };

std::string_view rope_scaling_name(RopeScalingType type); // "none", ...
std::optional<RopeScalingType> rope_scaling_from_name(std::string_view name);

struct RopeSettings {
  float freq_base = 1e6f;                          // qwen3.rope.freq_base
  RopeScalingType scaling = RopeScalingType::None; // qwen3.rope.scaling.type
  float factor = 1.0f;          // qwen3.rope.scaling.factor (context multiplier, >= 1)
  int64_t original_context = 0; // qwen3.rope.scaling.original_context_length (YaRN)
  float yarn_beta_fast = 32.0f; // qwen3.rope.scaling.yarn_beta_fast
  float yarn_beta_slow = 1.0f;  // qwen3.rope.scaling.yarn_beta_slow

  // "yarn, factor 4, original context 1024, beta fast 32 / slow 1,
  // magnitude 1.138629, base 1e+06"
  std::string describe() const;
};

// The per-pair angle rates of a head of head_dim values (head_dim / 2
// entries): base^(-2i / head_dim), then scaled. For YaRN, pair i blends
// extrapolation and interpolation with r = 1 - clamp((i - low) / max(0.001,
// high - low), 0, 1): rate * (r + (1 - r) / factor), where low =
// max(0, floor(c(beta_fast))), high = min(head_dim - 1, ceil(c(beta_slow))),
// c(n) = head_dim * ln(original_context / (2 pi n)) / (2 ln base).
std::vector<double> rope_inv_freq(const RopeSettings &rope, int64_t head_dim);

// The factor on cos and sin: 1 + 0.1 ln(factor) for YaRN, else 1.
double rope_magnitude(const RopeSettings &rope);

// User overrides in llama.cpp's spelling (--rope-scaling, --rope-scale,
// --rope-freq-base, --yarn-orig-ctx); zero or empty keeps the file's value.
struct RopeOverrides {
  std::string scaling;       // "none" | "linear" | "yarn"
  float scale = 0.0f;        // context factor (>= 1); with no scaling type: linear
  float freq_base = 0.0f;    // > 0
  int64_t yarn_orig_ctx = 0; // > 0
};

// Applies the overrides. Throws bonsai::Error naming the flag for a bad value.
void apply_rope_overrides(RopeSettings &rope, const RopeOverrides &overrides);

// The context the model is made for: n_ctx_train, or original context x
// factor when that is larger (scaling turned on by the user).
int64_t rope_context_limit(const RopeSettings &rope, int64_t n_ctx_train);

// Whether the settings differ from plain RoPE (a plugin must then be told).
inline bool rope_is_scaled(const RopeSettings &rope) {
  return rope.scaling != RopeScalingType::None && rope.factor != 1.0f;
}

} // namespace bonsai
