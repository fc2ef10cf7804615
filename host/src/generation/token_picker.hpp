#pragma once
// One step's token as Session::generate and bonsai::Generation take it: the
// reply format's choice (or the sampler's, argmax without one), then the
// reasoning budget, which may put </think> in its place, then the format
// following the token taken; and that token's log probabilities.
#include <span>
#include <vector>

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
        temperature_(request.sampling.temperature), top_logprobs_(request.top_logprobs),
        min_tokens_(request.min_tokens),
        stop_tokens_(request.stop_tokens ? *request.stop_tokens : tokenizer.stop_ids()) {}

  // The pick from `logits`; `budget` is the tokens the reply may still take
  // (-1: no limit), for the format; `made` the tokens the reply holds, for
  // min_tokens.
  int32_t choose(std::span<const float> logits, Sampler *sampler, int32_t budget, int32_t made) {
    if (made < min_tokens_)
      logits = without_stop_tokens(logits);
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
  // `logits` with the stop tokens' set to -inf (a copy).
  std::span<const float> without_stop_tokens(std::span<const float> logits);

  ConstrainedChoice &constrained_;
  ThinkBudget &think_budget_;
  const Tokenizer &tokenizer_;
  float temperature_;
  int32_t top_logprobs_;
  int32_t min_tokens_;
  std::vector<int32_t> stop_tokens_;
  std::vector<float> held_back_; // without_stop_tokens()'s copy
};

} // namespace bonsai::host
