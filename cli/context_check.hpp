#pragma once
// Refuses work that cannot fit in the context window before anything is
// printed, with a message that names the flags to change.
#include <cstdint>

namespace bonsai::cli {

struct ContextBudget {
  int64_t prompt_tokens = 0;
  int64_t n_predict = 0;           // -1 = until the context is full
  int64_t n_ctx = 0;               // the effective context window
  const char *predict_flag = "-n"; // names the flag in messages
};

// Throws bonsai::Error when the prompt is longer than the context, or when
// prompt + n_predict does not fit (with n_predict = -1: when the prompt
// leaves no room for a single token). For eval, whose --greedy is exact.
void check_context(const ContextBudget &budget);

// The tokens to generate for run and chat: n_predict, or what the context
// has left when n_predict asks for more, so that the reply ends at the
// context's end with stop reason "length" (llama.cpp's habit: a large -n is
// no error); -1 stays -1. Throws bonsai::Error only when the prompt alone
// leaves no room for a token.
int64_t fit_to_context(const ContextBudget &budget);

} // namespace bonsai::cli
