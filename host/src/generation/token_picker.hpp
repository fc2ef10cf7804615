#pragma once
// One step's token as Session::generate and bonsai::Generation take it: the
// reply format's choice (or the sampler's, argmax without one), then the
// reasoning budget, which may put </think> in its place, then the format
// following the token taken; and that token's log probabilities.
#include <span>

#include "bonsai/core/sampling.hpp"
#include "generation/constrained_choice.hpp"
#include "generation/generate_support.hpp"

namespace bonsai::host {

class TokenPicker {
public:
  // Borrows both; they must outlive the picker.
  TokenPicker(ConstrainedChoice &constrained, ThinkBudget &think_budget,
              const GenerateRequest &request, const Tokenizer &tokenizer)
      : constrained_(constrained), think_budget_(think_budget), tokenizer_(tokenizer),
        temperature_(request.sampling.temperature), top_logprobs_(request.top_logprobs) {}

  // The pick from `logits`; `budget` is the tokens the reply may still take
  // (-1: no limit), for the format.
  int32_t choose(std::span<const float> logits, Sampler *sampler, int32_t budget) {
    if (constrained_.active())
      return constrained_.choose(logits, sampler, budget);
    return sampler != nullptr ? sampler->sample(logits) : argmax(logits);
  }

  // `token` as the reply takes it.
  int32_t take(int32_t token) {
    token = think_budget_.choose(token);
    think_budget_.accept(token);
    if (constrained_.active())
      constrained_.accept(token);
    return token;
  }

  // Log probabilities of `token`, from the logits its step drew from.
  StepLogprobs logprobs(int32_t token, std::span<const float> logits, Sampler *sampler) const;

private:
  ConstrainedChoice &constrained_;
  ThinkBudget &think_budget_;
  const Tokenizer &tokenizer_;
  float temperature_;
  int32_t top_logprobs_;
};

} // namespace bonsai::host
