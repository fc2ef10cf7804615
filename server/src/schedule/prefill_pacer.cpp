#include "schedule/prefill_pacer.hpp"

#include <algorithm>
#include <cmath>

namespace bonsai::server {
namespace {

// Weight of the newest step in the moving averages: recent enough to follow
// a change of load, smooth enough that one slow step does not swing the fit.
constexpr double kNewest = 0.25;
// Below this spread of step sizes (tokens^2) the slope is not known yet.
constexpr double kLeastSpread = 1.0;

void blend(double &average, double sample) {
  average += kNewest * (sample - average);
}

} // namespace

int32_t PrefillPacer::chunk(int32_t decode_tokens) const {
  if (options_.itl_budget <= 0.0 || !fitted_ || !(per_token_ms_ > 0.0))
    return options_.max_chunk; // not measured yet, or tokens look free
  const double decode_step = fixed_ms_ + per_token_ms_ * decode_tokens;
  const double tokens = std::floor((options_.itl_budget - 1.0) * decode_step / per_token_ms_);
  return static_cast<int32_t>(std::clamp(tokens, 1.0, static_cast<double>(options_.max_chunk)));
}

void PrefillPacer::record(double step_ms, int32_t decode_tokens, int32_t prompt_tokens) {
  const double tokens = static_cast<double>(decode_tokens) + prompt_tokens;
  if (tokens <= 0.0 || !(step_ms >= 0.0) || !std::isfinite(step_ms))
    return; // an empty step, or a clock gone wrong
  if (!seen_) {
    seen_ = true;
    tokens_ = tokens;
    ms_ = step_ms;
    tokens_sq_ = tokens * tokens;
    tokens_ms_ = tokens * step_ms;
    return;
  }
  blend(tokens_, tokens);
  blend(ms_, step_ms);
  blend(tokens_sq_, tokens * tokens);
  blend(tokens_ms_, tokens * step_ms);
  const double spread = tokens_sq_ - tokens_ * tokens_;
  if (spread < kLeastSpread)
    return;
  fitted_ = true;
  per_token_ms_ = (tokens_ms_ - tokens_ * ms_) / spread;
  fixed_ms_ = std::max(ms_ - per_token_ms_ * tokens_, 0.0);
}

} // namespace bonsai::server
