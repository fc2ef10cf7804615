#include "generation/token_picker.hpp"

#include "generation/step_logprobs.hpp"

namespace bonsai::host {

StepLogprobs TokenPicker::logprobs(int32_t token, std::span<const float> logits,
                                   Sampler *sampler) const {
  const std::span<const float> drawn =
      constrained_.active() ? constrained_.drawn_from(logits) : logits;
  return step_logprobs({drawn_scores(drawn, sampler), temperature_, token, top_logprobs_},
                       tokenizer_);
}

} // namespace bonsai::host
