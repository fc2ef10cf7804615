#pragma once
// The tuner's verdict: the fastest candidate that passed its check, and the
// table of every candidate's time that the log, `bonsai bench --tune` and
// the cache show.
#include <string>
#include <vector>

#include "tune_cache.hpp"

namespace bonsai::cuda {

// The index in `table` of the timed candidate with the least time among
// those that passed (the first of equal ones), or -1 when none did.
int fastest_passed(const std::vector<CandidateTime> &table);

// The table as lines: a title naming the width and where the choice came
// from, then a row per candidate (microseconds a step, the check), the
// chosen one marked.
std::vector<std::string> tune_table_lines(const TuneRecord &record, const std::string &source);

} // namespace bonsai::cuda
