// Repetition, presence and frequency penalties (llama.cpp semantics).
#include <algorithm>
#include <string>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/sampling.hpp"

namespace bonsai {

void apply_penalties(const SamplerParams &params, std::span<const int32_t> recent,
                     std::span<float> logits) {
  // Count occurrences by sorting a copy: the window is short, and sorting
  // needs no table over the whole vocabulary.
  std::vector<int32_t> tokens(recent.begin(), recent.end());
  std::sort(tokens.begin(), tokens.end());
  for (size_t i = 0; i < tokens.size();) {
    const int32_t token = tokens[i];
    size_t count = 0;
    for (; i < tokens.size() && tokens[i] == token; ++i)
      ++count;
    if (token < 0 || static_cast<size_t>(token) >= logits.size())
      throw Error("sampler: accepted token " + std::to_string(token) + " is outside the " +
                  std::to_string(logits.size()) + " logits of this step");
    // Repetition penalty makes the token less likely whatever the logit's sign.
    float &logit = logits[static_cast<size_t>(token)];
    if (logit <= 0.0f)
      logit *= params.repeat_penalty;
    else
      logit /= params.repeat_penalty;
    logit -= static_cast<float>(count) * params.frequency_penalty + params.presence_penalty;
  }
}

} // namespace bonsai
