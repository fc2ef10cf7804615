// Catalogue rows "invalid command-line values" (docs/errors.md, section 5):
// exit code 2, one line naming the flag, the rule and the value given. The
// broader flag matrix lives in tests/cli; these are the rows the catalogue
// quotes verbatim.
#include "errors_support.hpp"

namespace bonsai::errors_test {
namespace {

struct Row {
  const char *name;
  std::vector<std::string> args; // after "run -m MODEL -p hi"
  const char *message;
};

const Row kRows[] = {
    {"NegativeTemperature", {"--temp", "-0.5"}, "--temp must be >= 0 (0 = greedy), got -0.5"},
    {"NanTemperature", {"--temp", "nan"}, "--temp must be a finite number, got nan"},
    {"TopPOutOfRange", {"--top-p", "1.5"}, "--top-p must be in (0, 1] (1 = off), got 1.5"},
    {"MinPOutOfRange", {"--min-p", "-0.1"}, "--min-p must be in [0, 1] (0 = off), got -0.1"},
    {"NegativeTopK", {"--top-k", "-1"}, "--top-k must be >= 0 (0 = off), got -1"},
    {"ZeroRepeatPenalty",
     {"--repeat-penalty", "0"},
     "--repeat-penalty must be > 0 (1 = off), got 0"},
    {"NPredictBelowMinusOne",
     {"-n", "-2"},
     "-n/--n-predict must be >= 0, or -1 for no limit, got -2"},
    {"NegativeContext",
     {"-c", "-1"},
     "-c/--ctx-size must be >= 0 (0 = the model's training context), got -1"},
    {"ZeroBatch", {"-b", "0"}, "-b/--batch-size must be >= 1, got 0"},
    {"NegativeThreads",
     {"-t", "-1"},
     "-t/--threads must be in 0..1024 (0 = automatic; more than the machine has are clamped), got "
     "-1"},
    {"NotANumber",
     {"-t", "many"},
     "-t/--threads takes whole numbers, one or a comma list (e.g. 1,2,4), got 'many'"},
    {"NumberTooLarge",
     {"-c", "99999999999"},
     "the argument ('99999999999') for option '--ctx-size' is invalid (see 'bonsai run --help')"},
    {"UnknownFlag", {"--bogus"}, "unrecognised option '--bogus' (see 'bonsai run --help')"},
    {"MissingValue",
     {"--temp"},
     "the required argument for option '--temp' is missing (see 'bonsai run --help')"},
    {"BadLogLevel",
     {"--log-level", "loud"},
     "--log-level must be one of trace, debug, info, warn, error, off; got 'loud'"},
};

// Failure messages name the row, not its bytes.
void PrintTo(const Row &row, std::ostream *os) {
  *os << row.name;
}

class CliValueErrors : public ::testing::TestWithParam<Row> {};

TEST_P(CliValueErrors, UsageErrorNamesFlagAndValue) {
  const Row &row = GetParam();
  std::vector<std::string> args = {"run", "-m", data_file("tiny-q1.gguf"), "-p", "hi"};
  args.insert(args.end(), row.args.begin(), row.args.end());
  expect_cli_error(run_bonsai(args), 2, row.message);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, CliValueErrors, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row> &info) { return info.param.name; });

TEST(CliCommandErrors, UnknownCommand) {
  expect_cli_error(
      run_bonsai({"frobnicate"}), 2,
      "unknown command 'frobnicate' (commands: run, chat, eval, info, backends, bench, serve; "
      "see bonsai --help)");
}

TEST(CliCommandErrors, NoModel) {
  expect_cli_error(run_bonsai({"run", "-p", "hi"}), 2,
                   "no model given: pass -m FILE (a GGUF model)");
}

TEST(CliCommandErrors, MalformedTokenList) {
  expect_cli_error(run_bonsai({"eval", "-m", data_file("tiny-q1.gguf"), "--tokens", "1,x"}), 2,
                   "--tokens expects comma-separated token ids (integers >= 0), got 'x' in '1,x'");
}

TEST(CliCommandErrors, UnknownBackend) {
  const CliResult r =
      run_bonsai({"run", "-m", data_file("tiny-q1.gguf"), "-p", "hi", "--backend", "nosuch"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("bonsai: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("libbonsai_nosuch.so"), std::string::npos) << r.err;
}

} // namespace
} // namespace bonsai::errors_test
