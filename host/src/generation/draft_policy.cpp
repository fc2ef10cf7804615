#include "generation/draft_policy.hpp"

#include <algorithm>

namespace bonsai::host {
namespace {

constexpr double kDecay = 0.9;      // weight of the past in the averages
constexpr int32_t kRetryAfter = 32; // plain steps before a short draft is tried again
constexpr double kMargin = 1.05;    // a draft must promise 5 % more tokens per ms

double average(double old, double sample) {
  return old < 0 ? sample : kDecay * old + (1 - kDecay) * sample;
}

} // namespace

int32_t DraftPolicy::length(int32_t offered) {
  const int32_t most = std::min(offered, options_.max);
  if (most < options_.min || plain_ms_ < 0)
    return 0; // measure a plain step first
  if (per_token_ms_ < 0)
    return std::max(options_.min, std::min(most, 4)); // measure a verified step
  // Expected tokens from k proposals: 1 + p + p^2 + ... + p^k (a proposal
  // counts only if every one before it was kept).
  const double p = kept_ / tried_;
  double best_rate = kMargin / plain_ms_;
  int32_t best = 0;
  double expected = 1, term = 1;
  for (int32_t k = 1; k <= most; ++k) {
    term *= p;
    expected += term;
    const double rate = expected / (plain_ms_ + k * per_token_ms_);
    if (k >= options_.min && rate > best_rate) {
      best_rate = rate;
      best = k;
    }
  }
  if (best == 0 && ++plain_since_try_ >= kRetryAfter) {
    plain_since_try_ = 0;
    return std::max(options_.min, std::min(most, 2));
  }
  return best;
}

void DraftPolicy::plain_step(double ms) {
  plain_ms_ = average(plain_ms_, ms);
}

void DraftPolicy::verify_step(int32_t proposed, int32_t kept, double ms) {
  if (proposed <= 0)
    return;
  if (plain_ms_ >= 0)
    per_token_ms_ = average(per_token_ms_, std::max(0.0, ms - plain_ms_) / proposed);
  // Proposals after the first refused one were never tried.
  kept_ = kDecay * kept_ + kept;
  tried_ = kDecay * tried_ + kept + (kept < proposed ? 1 : 0);
}

} // namespace bonsai::host
