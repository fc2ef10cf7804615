#pragma once
// How many prompt tokens a step may carry while replies are decoding. A step
// that reads a prompt chunk beside the decode tokens delays every running
// stream's next token by the chunk's cost, so the pacer sizes the chunk by
// measured cost: it fits step time = fixed + per_token * tokens to recent
// steps (moving averages of the moments, so the fit follows the load) and
// keeps a step within `itl_budget` times the decode-only step it predicts
// (docs/server.md, "Scheduling").
#include <cstdint>

namespace bonsai::server {

struct PacerOptions {
  int32_t max_chunk = 64;   // --prefill-chunk: never more prompt tokens per step
  double itl_budget = 1.75; // 0: always max_chunk; else >= 1
};

class PrefillPacer {
public:
  explicit PrefillPacer(PacerOptions options) : options_(options) {}

  // Prompt tokens the next step may carry beside `decode_tokens`: max_chunk
  // until steps of different sizes have been seen, never less than 1 so
  // every prompt moves on.
  int32_t chunk(int32_t decode_tokens) const;

  // A step of `decode_tokens` and `prompt_tokens` took step_ms.
  void record(double step_ms, int32_t decode_tokens, int32_t prompt_tokens);

private:
  PacerOptions options_;
  bool seen_ = false;
  // Moving averages of tokens, time, tokens^2 and tokens * time per step.
  double tokens_ = 0.0, ms_ = 0.0, tokens_sq_ = 0.0, tokens_ms_ = 0.0;
  // The last fit made while the step sizes were spread enough: a long run
  // of equal steps (decoding only) keeps it rather than forgetting it.
  bool fitted_ = false;
  double fixed_ms_ = 0.0, per_token_ms_ = 0.0;
};

} // namespace bonsai::server
