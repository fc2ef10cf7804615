// Sampler state (seeded generator, window of accepted tokens) and the step
// pipeline. The candidate filters live in candidates.cpp.
#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>

#include "bonsai/core/error.hpp"
#include "bonsai/core/sampling.hpp"

namespace bonsai {

Sampler::Sampler(SamplerParams params) : params_(params), rng_(params.seed) {
  params_.validate();
}

void Sampler::accept(int32_t token) {
  if (token < 0)
    throw Error("sampler: cannot accept the negative token id " + std::to_string(token));
  if (params_.repeat_last_n <= 0)
    return;
  // The window is short (tens of ids): erasing at the front is cheap.
  if (recent_.size() == static_cast<size_t>(params_.repeat_last_n))
    recent_.erase(recent_.begin());
  recent_.push_back(token);
}

void Sampler::reset() {
  recent_.clear();
  rng_.seed(params_.seed);
}

double Sampler::next_uniform() {
  // Top 53 bits of one 64-bit draw, scaled to [0, 1): exact and portable.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

std::span<const float> Sampler::with_penalties(std::span<const float> logits) {
  if (!params_.penalties_enabled() || recent_.empty())
    return logits;
  penalized_.assign(logits.begin(), logits.end());
  bonsai::apply_penalties(params_, recent_, penalized_);
  return penalized_;
}

// The penalties, then (unless greedy) the candidate stages: candidates_
// holds what a draw picks from. Returns the penalized scores.
std::span<const float> Sampler::prepare(std::span<const float> logits) {
  if (logits.empty())
    throw Error("sampler: the logits are empty");
  if (logits.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw Error("sampler: " + std::to_string(logits.size()) +
                " logits do not fit in an int32 token id");
  const std::span<const float> scores = with_penalties(logits);
  if (params_.greedy())
    return scores;
  select_candidates(scores);
  softmax();
  if (params_.top_p < 1.0f)
    keep_nucleus();
  if (params_.min_p > 0.0f)
    keep_above_min_p();
  return scores;
}

int32_t Sampler::sample(std::span<const float> logits) {
  const std::span<const float> scores = prepare(logits);
  return params_.greedy() ? argmax(scores) : draw();
}

int32_t Sampler::sample_against(std::span<const float> logits, int32_t proposed) {
  const std::span<const float> scores = prepare(logits);
  if (params_.greedy())
    return argmax(scores);
  double total = 0.0, mass = 0.0;
  for (const Candidate &c : candidates_) {
    total += c.prob;
    if (c.id == proposed)
      mass += c.prob;
  }
  if (mass > 0.0 && next_uniform() * total < mass)
    return proposed;
  // Rejected: the rest of p, with the proposed token taken out.
  for (Candidate &c : candidates_)
    if (c.id == proposed)
      c.prob = 0.0f;
  return draw();
}

std::vector<TokenProb> Sampler::distribution(std::span<const float> logits) {
  const std::span<const float> scores = prepare(logits);
  if (params_.greedy())
    return {{argmax(scores), 1.0f}};
  double total = 0.0;
  for (const Candidate &c : candidates_)
    total += c.prob;
  std::vector<TokenProb> out;
  for (const Candidate &c : candidates_)
    if (c.prob > 0.0f)
      out.push_back({c.id, static_cast<float>(c.prob / total)});
  return out;
}

int32_t Sampler::draw_from(std::span<const TokenProb> q) {
  candidates_.clear();
  for (const TokenProb &t : q)
    candidates_.push_back({t.id, 0.0f, t.prob});
  return draw();
}

int32_t Sampler::sample_against(std::span<const float> logits, int32_t proposed,
                                std::span<const TokenProb> q) {
  if (params_.greedy())
    return argmax(with_penalties(logits));
  const std::vector<TokenProb> p = distribution(logits);
  double q_proposed = 0.0, p_proposed = 0.0;
  for (const TokenProb &t : q)
    if (t.id == proposed)
      q_proposed = t.prob;
  for (const TokenProb &t : p)
    if (t.id == proposed)
      p_proposed = t.prob;
  if (p_proposed > 0.0 && next_uniform() * q_proposed < p_proposed)
    return proposed; // u < min(1, p/q)
  // Rejected: the residual max(0, p - q), over p's tokens.
  std::unordered_map<int32_t, float> q_of;
  q_of.reserve(q.size());
  for (const TokenProb &t : q)
    q_of[t.id] = t.prob;
  candidates_.clear();
  for (const TokenProb &t : p) {
    const auto it = q_of.find(t.id);
    candidates_.push_back(
        {t.id, 0.0f, std::max(0.0f, t.prob - (it == q_of.end() ? 0.0f : it->second))});
  }
  return draw();
}

int32_t Sampler::draw() {
  double total = 0.0;
  for (const Candidate &c : candidates_)
    total += c.prob;
  const double target = next_uniform() * total;
  double cumulative = 0.0;
  int32_t last_possible = -1;
  for (const Candidate &c : candidates_) {
    if (c.prob <= 0.0f)
      continue; // a zero-probability token is never drawn
    cumulative += c.prob;
    last_possible = c.id;
    if (target < cumulative)
      return c.id;
  }
  // Only reachable through rounding of the running sum.
  return last_possible;
}

} // namespace bonsai
