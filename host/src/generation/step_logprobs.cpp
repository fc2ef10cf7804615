#include "generation/step_logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "bonsai/core/sampling.hpp"

namespace bonsai::host {
namespace {

std::string bytes_of(const Tokenizer &tokenizer, int32_t token) {
  return token < tokenizer.n_vocab() ? std::string(tokenizer.token_bytes(token)) : std::string();
}

} // namespace

std::span<const float> drawn_scores(std::span<const float> logits, Sampler *sampler) {
  return sampler != nullptr ? sampler->penalized(logits) : logits;
}

StepLogprobs step_logprobs(const LogprobRequest &r, const Tokenizer &tokenizer) {
  if (r.token < 0 || static_cast<size_t>(r.token) >= r.scores.size())
    throw InvalidArgument("logprobs: the token is outside the logits");
  const double t = r.temperature > 0.0f ? r.temperature : 1.0;
  double top = -std::numeric_limits<double>::infinity();
  for (const float v : r.scores)
    if (std::isfinite(v))
      top = std::max(top, static_cast<double>(v));
  double sum = 0.0;
  for (const float v : r.scores)
    if (std::isfinite(v))
      sum += std::exp((static_cast<double>(v) - top) / t);
  const double log_norm = top / t + std::log(sum);
  const auto logprob = [&](int32_t id) {
    const float v = r.scores[static_cast<size_t>(id)];
    return std::isfinite(v) ? static_cast<float>(static_cast<double>(v) / t - log_norm)
                            : -std::numeric_limits<float>::infinity();
  };
  StepLogprobs out;
  out.chosen = {r.token, logprob(r.token), bytes_of(tokenizer, r.token)};
  if (r.top > 0) {
    std::vector<int32_t> ids(r.scores.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t n = std::min<size_t>(static_cast<size_t>(r.top), ids.size());
    const auto better = [&](int32_t a, int32_t b) {
      const float va = std::isfinite(r.scores[static_cast<size_t>(a)])
                           ? r.scores[static_cast<size_t>(a)]
                           : -std::numeric_limits<float>::infinity();
      const float vb = std::isfinite(r.scores[static_cast<size_t>(b)])
                           ? r.scores[static_cast<size_t>(b)]
                           : -std::numeric_limits<float>::infinity();
      return va > vb || (va == vb && a < b);
    };
    std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(), better);
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(r.scores[static_cast<size_t>(ids[i])]))
        out.top.push_back({ids[i], logprob(ids[i]), bytes_of(tokenizer, ids[i])});
  }
  return out;
}

} // namespace bonsai::host
