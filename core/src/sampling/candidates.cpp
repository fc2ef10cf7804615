// Candidate stages of Sampler::sample: top-k selection, softmax with
// temperature, nucleus (top-p) and min-p filtering. None sorts the whole
// vocabulary unless the distribution is so flat that the nucleus needs it.
#include <algorithm>
#include <cmath>
#include <limits>

#include "bonsai/core/error.hpp"
#include "bonsai/core/sampling.hpp"

namespace bonsai {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();
// First prefix sorted when looking for the nucleus; grows 4x per round.
constexpr size_t kNucleusFirstChunk = 64;

float sanitized(float logit) {
  return logit == logit ? logit : kNegInf;
}

// Orders candidates best first: higher logit, then lower id. A strict weak
// order because NaN was replaced by -inf on the way in.
template <typename C> bool better(const C &a, const C &b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

} // namespace

void Sampler::select_candidates(std::span<const float> logits) {
  const auto vocab = static_cast<int32_t>(logits.size());
  const int32_t k = params_.top_k;
  candidates_.clear();
  if (k <= 0 || k >= vocab) {
    candidates_.reserve(logits.size());
    for (int32_t i = 0; i < vocab; ++i)
      candidates_.push_back({i, sanitized(logits[static_cast<size_t>(i)]), 0.0f});
    sorted_ = false;
    return;
  }
  // One pass with a heap of the k best so far (its front is the worst of
  // them): O(V log k), and most logits are rejected by one comparison.
  const auto worse_first = [](const Candidate &a, const Candidate &b) { return better(a, b); };
  candidates_.reserve(static_cast<size_t>(k));
  for (int32_t i = 0; i < k; ++i) {
    candidates_.push_back({i, sanitized(logits[static_cast<size_t>(i)]), 0.0f});
    std::push_heap(candidates_.begin(), candidates_.end(), worse_first);
  }
  for (int32_t i = k; i < vocab; ++i) {
    const float logit = sanitized(logits[static_cast<size_t>(i)]);
    // Ids grow, so an equal logit never beats the current worst.
    if (!(logit > candidates_.front().logit))
      continue;
    std::pop_heap(candidates_.begin(), candidates_.end(), worse_first);
    candidates_.back() = {i, logit, 0.0f};
    std::push_heap(candidates_.begin(), candidates_.end(), worse_first);
  }
  std::sort(candidates_.begin(), candidates_.end(), better<Candidate>);
  sorted_ = true;
}

void Sampler::softmax() {
  float max_logit = kNegInf;
  for (const Candidate &c : candidates_)
    max_logit = std::max(max_logit, c.logit);
  if (max_logit == kNegInf)
    throw Error("sampler: every candidate logit is -inf or NaN; nothing can be sampled");
  double sum = 0.0;
  for (Candidate &c : candidates_) {
    if (max_logit == kPosInf) // +inf logits share all the probability
      c.prob = c.logit == kPosInf ? 1.0f : 0.0f;
    else // subtract, then divide: 0 for the best, never inf - inf or 0 * inf
      c.prob = std::exp((c.logit - max_logit) / params_.temperature);
    sum += c.prob;
  }
  const double inv_sum = 1.0 / sum;
  for (Candidate &c : candidates_)
    c.prob = static_cast<float>(c.prob * inv_sum);
}

void Sampler::keep_nucleus() {
  // Smallest best-first prefix whose probability reaches top_p (at least one
  // token). Sort only as far as needed: nth_element splits off the next
  // chunk, which is then sorted on its own.
  const size_t n = candidates_.size();
  size_t sorted_end = sorted_ ? n : 0;
  size_t walked = 0;
  double cumulative = 0.0;
  while (true) {
    if (walked == sorted_end) {
      const size_t next = std::min(n, std::max(kNucleusFirstChunk, sorted_end * 4));
      const auto first = candidates_.begin() + static_cast<std::ptrdiff_t>(sorted_end);
      const auto middle = candidates_.begin() + static_cast<std::ptrdiff_t>(next);
      if (middle != candidates_.end())
        std::nth_element(first, middle, candidates_.end(), better<Candidate>);
      std::sort(first, middle, better<Candidate>);
      sorted_end = next;
    }
    cumulative += candidates_[walked].prob;
    ++walked;
    if (cumulative >= params_.top_p || walked == n)
      break;
  }
  candidates_.resize(walked);
  sorted_ = true;
}

void Sampler::keep_above_min_p() {
  float max_prob = 0.0f;
  for (const Candidate &c : candidates_)
    max_prob = std::max(max_prob, c.prob);
  const float threshold = params_.min_p * max_prob;
  // erase_if keeps the order, so a sorted list stays sorted.
  std::erase_if(candidates_, [threshold](const Candidate &c) { return c.prob < threshold; });
}

} // namespace bonsai
