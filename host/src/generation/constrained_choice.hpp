#pragma once
// GenerateRequest::format at each step. The token the sampler (or argmax)
// picks is kept when the format allows it, which is the usual case and
// costs one token walk; otherwise the step picks again from the logits with
// every refused token masked out.
#include <optional>
#include <span>
#include <vector>

#include "bonsai/core/sampling.hpp"
#include "bonsai/core/token_constraint.hpp"
#include "model/engine_impl.hpp"

namespace bonsai::host {

class ConstrainedChoice {
public:
  // Compiles the request's format; FormatError when it cannot be followed.
  // Inactive for ReplyFormat::Kind::text.
  ConstrainedChoice(const Engine::Impl &engine, const GenerateRequest &request,
                    std::span<const int32_t> prompt, std::vector<int32_t> end_tokens);

  bool active() const { return constraint_.has_value(); }
  // The next token; `budget` is how many tokens the reply may still take,
  // this one included (-1: no limit). `sampler` null: greedy.
  int32_t choose(std::span<const float> logits, Sampler *sampler, int32_t budget);
  // Follows the token taken (which may differ from choose()'s: the reasoning
  // budget can put </think> in its place).
  void accept(int32_t token);
  void add_to(GenerateStats &stats) const;
  // The logits the last choose() drew from: `logits` itself, or its masked
  // copy when the first draw was refused.
  std::span<const float> drawn_from(std::span<const float> logits) const {
    return masked_last_ ? std::span<const float>(masked_) : logits;
  }

private:
  std::optional<TokenConstraint> constraint_;
  std::vector<float> masked_;
  bool masked_last_ = false;
  int32_t tokens_ = 0, masks_ = 0;
  double ms_ = 0;
};

// The smaller of two token limits, where -1 means none.
int32_t tighter_budget(int32_t a, int32_t b);

} // namespace bonsai::host
