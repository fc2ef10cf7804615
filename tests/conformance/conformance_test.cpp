// GoogleTest front end of the plugin conformance checks (plugin_checks.hpp).
// Plugin: $BONSAI_PLUGIN (default: this build's CPU plugin). Context options:
// $BONSAI_PLUGIN_OPTIONS (default: the suite runs with "kernels=reference"
// under the exact tolerances and with each SIMD kernel set of the CPU plugin,
// or the plugin's default, under the fast ones; see
// plugin_option_sets_from_env).
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <tuple>

#include "bonsai/core/formats.hpp"
#include "plugin_checks.hpp"

namespace bonsai::conformance {
namespace {

PluginChecker make_checker(const std::string &options) {
  CheckOptions o;
  o.plugin_path = test::plugin_path_from_env();
  o.context_options = options;
  o.exact = options_select_exact_kernels(options);
  return PluginChecker(o);
}

void report(const CheckResult &r) {
  for (const std::string &note : r.notes)
    std::cout << "[ note     ] " << r.name << ": " << note << "\n";
  if (r.skipped)
    GTEST_SKIP() << r.summary();
  EXPECT_TRUE(r.passed()) << r.summary();
}

// Runs one check; checks that need a context are skipped when the plugin
// cannot make one (see context_skip_reason).
void run_check(const std::string &options, bool needs_device,
               const std::function<CheckResult(const PluginChecker &)> &check) {
  const PluginChecker checker = make_checker(options);
  if (needs_device) {
    if (const std::string reason = checker.context_skip_reason(); !reason.empty())
      GTEST_SKIP() << reason;
    if (const std::string reason = test::unsupported_option_reason(checker.api(), options);
        !reason.empty())
      GTEST_SKIP() << reason;
  }
  report(check(checker));
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, ApiTable) {
  run_check(GetParam(), false, [](const PluginChecker &c) { return c.api_table(); });
}
TEST_P(Conformance, ExportsExactlyOneSymbol) {
  run_check(GetParam(), false, [](const PluginChecker &c) { return c.exported_symbols(); });
}
TEST_P(Conformance, Probe) {
  run_check(GetParam(), false, [](const PluginChecker &c) { return c.probe(); });
}
TEST_P(Conformance, ErrorPaths) {
  run_check(GetParam(), true, [](const PluginChecker &c) { return c.error_paths(); });
}
TEST_P(Conformance, KvTruncateThenRedecodeIsBitExact) {
  run_check(GetParam(), true, [](const PluginChecker &c) { return c.kv_truncate_redecode(); });
}
TEST_P(Conformance, ArgmaxMatchesLogitsAndTiesPickLowestId) {
  run_check(GetParam(), true, [](const PluginChecker &c) { return c.argmax_matches_logits(); });
}

TEST_P(Conformance, MultiSequenceStepEqualsEachSequenceAlone) {
  run_check(GetParam(), true, [](const PluginChecker &c) { return c.multi_sequence_step(); });
}
TEST_P(Conformance, KvSlotsCopyTruncateAndRefuseMisuse) {
  run_check(GetParam(), true, [](const PluginChecker &c) { return c.kv_slots(); });
}

INSTANTIATE_TEST_SUITE_P(Plugin, Conformance,
                         ::testing::ValuesIn(test::plugin_option_sets_from_env()),
                         [](const auto &info) { return test::option_set_label(info.param); });

using TypedParam = std::tuple<std::string, uint32_t>;
class ConformanceByType : public ::testing::TestWithParam<TypedParam> {};

TEST_P(ConformanceByType, MatmulMatchesDequantizedFloat64) {
  const uint32_t type = std::get<1>(GetParam());
  run_check(std::get<0>(GetParam()), true,
            [type](const PluginChecker &c) { return c.matmul(type); });
}
TEST_P(ConformanceByType, LayerEncodeMatchesFloat64Forward) {
  const uint32_t type = std::get<1>(GetParam());
  run_check(std::get<0>(GetParam()), true,
            [type](const PluginChecker &c) { return c.layer_encode(type); });
}

INSTANTIATE_TEST_SUITE_P(
    Plugin, ConformanceByType,
    ::testing::Combine(::testing::ValuesIn(test::plugin_option_sets_from_env()),
                       ::testing::ValuesIn(known_weight_types())),
    [](const auto &info) {
      return test::option_set_label(std::get<0>(info.param)) + "_" +
             std::string(type_name(std::get<1>(info.param)));
    });

} // namespace
} // namespace bonsai::conformance
