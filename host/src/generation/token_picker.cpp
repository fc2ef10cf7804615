#include "generation/token_picker.hpp"

#include "generation/step_logprobs.hpp"

#include <limits>

namespace bonsai::host {

std::span<const float> TokenPicker::without_stop_tokens(std::span<const float> logits) {
  held_back_.assign(logits.begin(), logits.end());
  for (const int32_t token : stop_tokens_)
    if (token >= 0 && static_cast<size_t>(token) < held_back_.size())
      held_back_[static_cast<size_t>(token)] = -std::numeric_limits<float>::infinity();
  return held_back_;
}

StepLogprobs TokenPicker::logprobs(int32_t token, std::span<const float> logits,
                                   Sampler *sampler) const {
  const std::span<const float> drawn =
      constrained_.active() ? constrained_.drawn_from(logits) : logits;
  return step_logprobs({drawn_scores(drawn, sampler), temperature_, token, top_logprobs_},
                       tokenizer_);
}

} // namespace bonsai::host
