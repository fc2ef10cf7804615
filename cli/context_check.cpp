#include "context_check.hpp"

#include <algorithm>
#include <string>

#include "bonsai/core/error.hpp"

namespace bonsai::cli {

namespace {

void check_prompt(const ContextBudget &b, bool needs_room) {
  if (b.prompt_tokens > b.n_ctx || (needs_room && b.prompt_tokens >= b.n_ctx))
    throw Error("the prompt is " + std::to_string(b.prompt_tokens) +
                " tokens, which does not fit in the context of " + std::to_string(b.n_ctx) +
                " tokens; shorten it or raise -c/--ctx-size");
}

} // namespace

int64_t fit_to_context(const ContextBudget &b) {
  check_prompt(b, true);
  if (b.n_predict < 0)
    return b.n_predict;
  return std::min(b.n_predict, b.n_ctx - b.prompt_tokens);
}

void check_context(const ContextBudget &b) {
  const std::string ctx = std::to_string(b.n_ctx);
  check_prompt(b, b.n_predict < 0);
  if (b.n_predict >= 0 && b.prompt_tokens + b.n_predict > b.n_ctx)
    throw Error(std::string(b.predict_flag) + " " + std::to_string(b.n_predict) +
                " goes past the context: the prompt is " + std::to_string(b.prompt_tokens) +
                " tokens and the context holds " + ctx + ", so at most " +
                std::to_string(b.n_ctx - b.prompt_tokens) +
                " more fit; lower it or raise -c/--ctx-size");
}

} // namespace bonsai::cli
