#include "generation/draft_policy.hpp"

#include <algorithm>

namespace bonsai::host {
namespace {

constexpr double kDecay = 0.9; // weight of the past in the averages
// Plain steps before a short draft is tried again: soon, since a draft
// stopped by a few early refusals may be a good one; retries that keep
// nothing then space themselves by their cost.
constexpr int32_t kRetryAfter = 8;
constexpr int32_t kRetryAfterMost = 1024;
constexpr double kMargin = 1.05;     // a draft must promise 5 % more tokens per ms
constexpr double kRetryShare = 0.05; // retries that keep nothing may cost this share of the time

double average(double old, double sample) {
  return old < 0 ? sample : kDecay * old + (1 - kDecay) * sample;
}

} // namespace

int32_t DraftPolicy::length(int32_t offered) {
  const int32_t most = std::min(offered, options_.max);
  if (most < options_.min)
    return 0;
  if (!options_.adaptive)
    return most;
  if (plain_ms_ < 0)
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
    const double measured =
        static_cast<size_t>(k) < step_ms_.size() ? step_ms_[static_cast<size_t>(k)] : -1.0;
    const double rate = expected / (measured >= 0 ? measured : plain_ms_ + k * per_token_ms_);
    if (k >= options_.min && rate > best_rate) {
      best_rate = rate;
      best = k;
    }
  }
  if (best == 0 && ++plain_since_try_ >= retry_after_) {
    plain_since_try_ = 0;
    retrying_ = true;
    return std::max(options_.min, std::min(most, 2));
  }
  return best;
}

void DraftPolicy::plain_step(double ms) {
  plain_ms_ = average(plain_ms_, ms);
}

void DraftPolicy::verify_step(int32_t proposed, int32_t kept, double ms, double one_off_ms) {
  if (proposed <= 0)
    return;
  if (plain_ms_ >= 0)
    per_token_ms_ = average(per_token_ms_, std::max(0.0, ms - one_off_ms - plain_ms_) / proposed);
  if (static_cast<size_t>(proposed) < step_ms_.size()) {
    double &step = step_ms_[static_cast<size_t>(proposed)];
    step = average(step, ms - one_off_ms);
  }
  count_outcome(proposed, kept, ms);
}

void DraftPolicy::nothing_proposed(double ms) {
  // Until a step is verified, the ask's cost stands in for a proposal's.
  if (per_token_ms_ < 0)
    per_token_ms_ = ms;
  count_outcome(1, 0, ms);
}

void DraftPolicy::count_outcome(int32_t proposed, int32_t kept, double ms) {
  if (retrying_) {
    retrying_ = false;
    // A retry that keeps nothing is spaced so that such retries cost at most
    // kRetryShare of the time (a draft model catching up on the context is
    // not cheap), and further apart each time it happens again.
    const int32_t by_cost =
        plain_ms_ > 0 ? static_cast<int32_t>(ms / (kRetryShare * plain_ms_)) : kRetryAfter;
    retry_after_ =
        kept > 0 ? kRetryAfter : std::min(kRetryAfterMost, std::max(by_cost, retry_after_ * 2));
  }
  // Proposals after the first refused one were never tried.
  kept_ = kDecay * kept_ + kept;
  tried_ = kDecay * tried_ + kept + (kept < proposed ? 1 : 0);
}

} // namespace bonsai::host
