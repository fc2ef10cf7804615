#pragma once
// The RoPE a bound model asks for, read once from bonsai_model_desc: the
// host's per-pair rates and magnitude (ABI 1.1), or plain RoPE's from
// rope_freq_base when an older host did not pass them.
#include <cmath>
#include <cstddef>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/plugin_error.hpp"

namespace bonsai::plugin {

struct RopeRates {
  std::vector<double> inv_freq; // head_dim / 2: pair i turns pos * inv_freq[i]
  double magnitude = 1.0;       // factor on cos and sin
};

// Whether the host's struct reaches the 1.1 RoPE fields.
inline bool model_desc_has_rope_rates(const bonsai_model_desc &d) {
  return d.struct_size >= offsetof(bonsai_model_desc, rope_magnitude) + sizeof(float);
}

// Throws PluginError(INVALID_ARGUMENT) for a rate or magnitude that is not
// finite and non-negative (positive for the magnitude).
inline RopeRates read_rope_rates(const bonsai_model_desc &desc) {
  const bool given = model_desc_has_rope_rates(desc);
  const size_t half = static_cast<size_t>(desc.head_dim / 2);
  RopeRates rope;
  rope.inv_freq.resize(half);
  for (size_t i = 0; i < half; ++i) {
    double &rate = rope.inv_freq[i];
    rate = given && desc.rope_inv_freq != nullptr
               ? desc.rope_inv_freq[i]
               : std::pow(static_cast<double>(desc.rope_freq_base),
                          -2.0 * static_cast<double>(i) / desc.head_dim);
    if (!(rate >= 0.0) || !std::isfinite(rate))
      fail_invalid(strformat("bind_model: RoPE rate %zu is %g, not a finite rate >= 0", i, rate));
  }
  if (given && desc.rope_magnitude != 0.0f)
    rope.magnitude = desc.rope_magnitude;
  if (!(rope.magnitude > 0.0) || !std::isfinite(rope.magnitude))
    fail_invalid(strformat("bind_model: rope_magnitude %g must be a positive finite number",
                           rope.magnitude));
  return rope;
}

} // namespace bonsai::plugin
