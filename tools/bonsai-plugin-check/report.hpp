#pragma once
// The checker's text report: one PASS/FAIL/SKIP line per check with its
// failures and measured values indented below, then a summary.
#include <cstdio>
#include <vector>

#include "plugin_checks.hpp"

namespace bonsai::plugin_check {

struct Tally {
  int passed = 0;
  int failed = 0;
  int skipped = 0;
};

// Prints one check and counts it.
void print_check(std::FILE *out, const conformance::CheckResult &result, Tally &tally);

} // namespace bonsai::plugin_check
