#include "tune_choice.hpp"

#include "plugin_error.hpp"

namespace bonsai::cuda {

int fastest_passed(const std::vector<CandidateTime> &table) {
  int best = -1;
  for (size_t i = 0; i < table.size(); ++i) {
    const CandidateTime &row = table[i];
    if (row.passed && row.us >= 0 && (best < 0 || row.us < table[static_cast<size_t>(best)].us))
      best = static_cast<int>(i);
  }
  return best;
}

std::vector<std::string> tune_table_lines(const TuneRecord &record, const std::string &source) {
  std::vector<std::string> lines;
  lines.push_back(strformat("decode tune: steps of %d token%s on %s (%s): %s", record.key.width,
                            record.key.width == 1 ? "" : "s", record.key.device.c_str(),
                            source.c_str(), record.choice.c_str()));
  lines.push_back(strformat("decode tune:   %-56s %12s  %s", "candidate", "us a step", "check"));
  for (const CandidateTime &row : record.table) {
    const std::string time = row.us < 0 ? "-" : strformat("%.1f", row.us);
    std::string check = row.passed ? "passed" : "failed";
    if (!row.note.empty())
      check += ": " + row.note;
    lines.push_back(strformat("decode tune: %s %-56s %12s  %s",
                              row.name == record.choice ? "*" : " ", row.name.c_str(), time.c_str(),
                              check.c_str()));
  }
  return lines;
}

} // namespace bonsai::cuda
