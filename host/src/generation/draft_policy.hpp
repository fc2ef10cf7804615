#pragma once
// How many drafted tokens to verify in a step. A step that checks k
// proposals costs more than a plain one (on a CPU, prefill work for each);
// it pays only when enough of them are kept. The policy measures both (step
// times, and how often a proposal is kept) and proposes the length that
// gives the most expected tokens per millisecond, or none when a plain step
// wins, trying a short draft again now and then to notice a change (less
// and less often while the retries keep nothing).
#include <cstdint>

#include "bonsai/engine.hpp"

namespace bonsai::host {

class DraftPolicy {
public:
  explicit DraftPolicy(const DraftOptions &options) : options_(options) {}

  // Tokens to propose now, given how many the draft offers (0: a plain step).
  int32_t length(int32_t offered);
  void plain_step(double ms);
  void verify_step(int32_t proposed, int32_t kept, double ms);

private:
  DraftOptions options_;
  double plain_ms_ = -1;        // moving average of a plain step; < 0: not measured
  double per_token_ms_ = -1;    // of each proposal checked in a step; < 0: not measured
  double kept_ = 1, tried_ = 2; // decayed counts: P(a proposal is kept) = kept_ / tried_
  int32_t plain_since_try_ = 0; // plain steps since a draft was last verified
  int32_t retry_after_ = 32;    // doubles while retries keep nothing (up to 1024)
  bool retrying_ = false;       // the last draft was a retry
};

} // namespace bonsai::host
