#pragma once
// How many drafted tokens to verify in a step. A step that checks k
// proposals costs more than a plain one (on a CPU, prefill work for each);
// it pays only when enough of them are kept. The policy measures both (step
// times, and how often a proposal is kept) and proposes the length that
// gives the most expected tokens per millisecond, or none when a plain step
// wins, trying a short draft again now and then to notice a change (less
// and less often while the retries keep nothing). A step's cost need not
// grow evenly with k (the CPU's kernels take tokens in passes of three), so
// each length keeps its own measured cost; a length not measured yet is
// estimated from the cost per proposal over all of them.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "bonsai/engine.hpp"

namespace bonsai::host {

class DraftPolicy {
public:
  // Lengths up to this keep their own cost (longer ones: the estimate).
  static constexpr int32_t kMeasuredLengths = 64;
  explicit DraftPolicy(const DraftOptions &options)
      : options_(options),
        step_ms_(static_cast<size_t>(std::clamp(options.max, 0, kMeasuredLengths)) + 1, -1.0) {}

  // Tokens to propose now, given how many the draft offers (0: a plain step).
  int32_t length(int32_t offered);
  void plain_step(double ms);
  // `one_off_ms` of `ms` did not depend on the proposals (a draft model
  // catching up on context it missed): left out of the cost of a proposal,
  // counted in the spacing of retries.
  void verify_step(int32_t proposed, int32_t kept, double ms, double one_off_ms = 0);
  // The draft was asked and proposed nothing (a draft model below p_min):
  // `ms` spent, a proposal refused; the plain step that follows is measured
  // on its own (plain_step).
  void nothing_proposed(double ms);

private:
  // The kept share and the retry spacing after `proposed` were checked.
  void count_outcome(int32_t proposed, int32_t kept, double ms);

  DraftOptions options_;
  double plain_ms_ = -1;        // moving average of a plain step; < 0: not measured
  double per_token_ms_ = -1;    // of each proposal checked in a step; < 0: not measured
  std::vector<double> step_ms_; // [k]: moving average of a step verifying k; < 0: not measured
  double kept_ = 1, tried_ = 2; // decayed counts: P(a proposal is kept) = kept_ / tried_
  int32_t plain_since_try_ = 0; // plain steps since a draft was last verified
  int32_t retry_after_ = 8;     // grows while retries keep nothing (up to 1024)
  bool retrying_ = false;       // the last draft was a retry
};

} // namespace bonsai::host
