#include "report.hpp"

namespace bonsai::plugin_check {

void print_check(std::FILE *out, const conformance::CheckResult &result, Tally &tally) {
  const char *verdict = !result.passed() ? "FAIL" : result.skipped ? "SKIP" : "PASS";
  (!result.passed() ? tally.failed : result.skipped ? tally.skipped : tally.passed) += 1;
  std::fprintf(out, "%s  %s\n", verdict, result.name.c_str());
  for (const std::string &failure : result.failures)
    std::fprintf(out, "        error: %s\n", failure.c_str());
  for (const std::string &note : result.notes)
    std::fprintf(out, "        %s\n", note.c_str());
}

} // namespace bonsai::plugin_check
