#include "bonsai/core/rope.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "bonsai/core/error.hpp"

namespace bonsai {

std::string_view rope_scaling_name(RopeScalingType type) {
  switch (type) {
  case RopeScalingType::None:
    return "none";
  case RopeScalingType::Linear:
    return "linear";
  case RopeScalingType::Yarn:
    return "yarn";
  }
  return "none";
}

std::optional<RopeScalingType> rope_scaling_from_name(std::string_view name) {
  for (RopeScalingType t : {RopeScalingType::None, RopeScalingType::Linear, RopeScalingType::Yarn})
    if (rope_scaling_name(t) == name)
      return t;
  return std::nullopt;
}

std::string RopeSettings::describe() const {
  char buf[160];
  switch (scaling) {
  case RopeScalingType::None:
    std::snprintf(buf, sizeof buf, "none, base %g", static_cast<double>(freq_base));
    break;
  case RopeScalingType::Linear:
    std::snprintf(buf, sizeof buf, "linear, factor %g, base %g", static_cast<double>(factor),
                  static_cast<double>(freq_base));
    break;
  case RopeScalingType::Yarn:
    std::snprintf(buf, sizeof buf,
                  "yarn, factor %g, original context %lld, beta fast %g / slow %g, magnitude %.6f, "
                  "base %g",
                  static_cast<double>(factor), static_cast<long long>(original_context),
                  static_cast<double>(yarn_beta_fast), static_cast<double>(yarn_beta_slow),
                  rope_magnitude(*this), static_cast<double>(freq_base));
    break;
  }
  return buf;
}

std::vector<double> rope_inv_freq(const RopeSettings &rope, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  const double base = rope.freq_base;
  std::vector<double> rate(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    rate[static_cast<size_t>(i)] = std::pow(base, -2.0 * static_cast<double>(i) / head_dim);
  if (!rope_is_scaled(rope))
    return rate;
  const double factor = rope.factor;
  if (rope.scaling == RopeScalingType::Linear) {
    for (double &r : rate)
      r /= factor;
    return rate;
  }
  // YaRN: the pairs that turn fewer than beta_slow times over the original
  // context are interpolated, those that turn more than beta_fast times keep
  // their rate, with a linear ramp between.
  const auto corr_dim = [&](double n_rot) {
    return static_cast<double>(head_dim) *
           std::log(static_cast<double>(rope.original_context) / (n_rot * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(base));
  };
  const double low = std::max(0.0, std::floor(corr_dim(rope.yarn_beta_fast)));
  const double high =
      std::min(static_cast<double>(head_dim - 1), std::ceil(corr_dim(rope.yarn_beta_slow)));
  for (int64_t i = 0; i < half; ++i) {
    const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
    const double keep = 1.0 - std::clamp(y, 0.0, 1.0);
    double &r = rate[static_cast<size_t>(i)];
    r = r * keep + (r / factor) * (1.0 - keep);
  }
  return rate;
}

void apply_rope_overrides(RopeSettings &rope, const RopeOverrides &o) {
  if (!o.scaling.empty()) {
    const auto type = rope_scaling_from_name(o.scaling);
    if (!type)
      throw Error("--rope-scaling must be none, linear or yarn, not '" + o.scaling + "'");
    rope.scaling = *type;
  }
  if (!(o.scale == 0.0f || (std::isfinite(o.scale) && o.scale >= 1.0f)))
    throw Error("--rope-scale must be a context factor >= 1, not " + std::to_string(o.scale));
  if (o.scale != 0.0f) {
    rope.factor = o.scale;
    if (o.scaling.empty() && rope.scaling == RopeScalingType::None)
      rope.scaling = RopeScalingType::Linear; // as llama.cpp: a scale alone interpolates
  }
  if (!(o.freq_base == 0.0f || (std::isfinite(o.freq_base) && o.freq_base > 0.0f)))
    throw Error("--rope-freq-base must be > 0, not " + std::to_string(o.freq_base));
  if (o.freq_base != 0.0f)
    rope.freq_base = o.freq_base;
  if (o.yarn_orig_ctx < 0)
    throw Error("--yarn-orig-ctx must be > 0, not " + std::to_string(o.yarn_orig_ctx));
  if (o.yarn_orig_ctx != 0)
    rope.original_context = o.yarn_orig_ctx;
}

int64_t rope_context_limit(const RopeSettings &rope, int64_t n_ctx_train) {
  if (!rope_is_scaled(rope) || rope.original_context <= 0)
    return n_ctx_train;
  const double scaled = static_cast<double>(rope.original_context) * rope.factor;
  return std::max<int64_t>(n_ctx_train, static_cast<int64_t>(std::min(scaled, 1e12)));
}

double rope_magnitude(const RopeSettings &rope) {
  if (rope.scaling == RopeScalingType::Yarn && rope.factor != 1.0f)
    return 1.0 + 0.1 * std::log(static_cast<double>(rope.factor));
  return 1.0;
}

} // namespace bonsai
