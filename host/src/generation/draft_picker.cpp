#include "generation/draft_picker.hpp"

#include <algorithm>
#include <cmath>

#include "generation/generate_support.hpp"

namespace bonsai::host {
namespace {

// The largest softmax probability of the logits (temperature 1).
float top_probability(std::span<const float> logits) {
  float top = -INFINITY;
  for (const float v : logits)
    if (std::isfinite(v))
      top = std::max(top, v);
  double sum = 0;
  for (const float v : logits)
    if (std::isfinite(v))
      sum += std::exp(static_cast<double>(v) - top);
  return sum > 0 ? static_cast<float>(1.0 / sum) : 0.0f;
}

SamplerParams draft_sampling(const GenerateRequest &request) {
  SamplerParams params = sampler_params(request.sampling);
  params.seed += 0x9E3779B97F4A7C15ull; // its own stream, not the target's
  return params;
}

} // namespace

DraftPicker::DraftPicker(const GenerateRequest &request, bool best_only)
    : p_min_(request.draft.p_min), greedy_(best_only || request.sampling.is_greedy()),
      sampler_(draft_sampling(request)) {}

bool DraftPicker::pick(std::span<const float> logits, DraftProposal &out) {
  if (p_min_ > 0 && top_probability(logits) < p_min_)
    return false;
  if (greedy_) {
    out.tokens.push_back(argmax(logits));
  } else {
    out.q.push_back(sampler_.distribution(logits));
    out.tokens.push_back(sampler_.draw_from(out.q.back()));
  }
  return true;
}

} // namespace bonsai::host
