#pragma once
// The log probabilities a step reports (GenerateRequest::logprobs): from the
// scores the token was drawn from, at the sampling temperature.
#include <span>

#include "bonsai/core/sampling.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "bonsai/engine.hpp"

namespace bonsai::host {

struct LogprobRequest {
  std::span<const float> scores; // logits after penalties and the format's mask
  float temperature = 1.0f;      // <= 0 (greedy) counts as 1
  int32_t token = -1;            // the token taken
  int32_t top = 0;               // alternatives wanted, best first
};

// Throws InvalidArgument when the token is outside the scores. A token with
// no probability (masked out, -inf) gets -infinity.
StepLogprobs step_logprobs(const LogprobRequest &request, const Tokenizer &tokenizer);

// The scores a step drew `token` from: the sampler's penalties applied to
// `logits` (already masked by a format when one refused the first draw).
std::span<const float> drawn_scores(std::span<const float> logits, Sampler *sampler);

} // namespace bonsai::host
