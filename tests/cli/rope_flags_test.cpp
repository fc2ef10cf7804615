// The RoPE override flags from the command line: honoured (the logits move
// away from the file's reference when scaling is switched off, and match it
// when the file's own settings are restated), shown by `bonsai info`, bad
// values refused, and a context beyond training warns how to extend it.
#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

constexpr int kVocab = 2048;

// Min cosine of tiny-q1-yarn's exact logits, run with `extra` flags, against
// the float64 reference of the file as it is (YaRN, factor 4, 1024).
double yarn_min_cosine(const std::vector<std::string> &extra) {
  TempDir dir;
  const std::string out = dir.file("logits.f32");
  std::vector<std::string> args = {"eval",
                                   "-m",
                                   data_file("tiny-q1-yarn.gguf"),
                                   "--tokens",
                                   join_ids(json_ids("tiny-q1-yarn.prompt.json", "tokens")),
                                   "--logits",
                                   out,
                                   "--no-progress",
                                   "--backend-options",
                                   "kernels=reference"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_bonsai(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto got = read_f32(out);
  const auto want = read_f32(data_file("tiny-q1-yarn.ref.logits.f32"));
  if (got.size() != want.size())
    return -1.0;
  double worst = 1.0;
  for (size_t pos = 0; pos < want.size() / kVocab; ++pos)
    worst = std::min(worst, cosine(&got[pos * kVocab], &want[pos * kVocab], kVocab));
  return worst;
}

TEST(RopeFlags, FileSettingsMatchTheReferenceAndNoneDoesNot) {
  EXPECT_GE(yarn_min_cosine({}), 0.99999);
  EXPECT_GE(yarn_min_cosine({"--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-orig-ctx",
                             "1024", "--rope-freq-base", "1000000"}),
            0.99999);
  EXPECT_LT(yarn_min_cosine({"--rope-scaling", "none"}), 0.99);
  EXPECT_LT(yarn_min_cosine({"--rope-scaling", "linear"}), 0.99);
  EXPECT_LT(yarn_min_cosine({"--yarn-orig-ctx", "512"}), 0.9999);
}

TEST(RopeFlags, InfoShowsTheEffectiveSettings) {
  auto r = run_bonsai({"info", "-m", data_file("tiny-q1-yarn.gguf")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rope:          yarn, factor 4, original context 1024, beta fast 32 / "
                       "slow 1, magnitude 1.138629, base 1e+06\n"),
            std::string::npos)
      << r.out;
  r = run_bonsai({"info", "-m", data_file("tiny-q1.gguf"), "--rope-scale", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rope:          linear, factor 2, base 1e+06\n"), std::string::npos)
      << r.out;
}

TEST(RopeFlags, BadValuesAreUsageErrors) {
  for (const std::vector<std::string> &extra :
       {std::vector<std::string>{"--rope-scaling", "longrope"},
        {"--rope-scale", "0.5"},
        {"--rope-freq-base", "-1"},
        {"--yarn-orig-ctx", "-5"}}) {
    const auto r = run_bonsai({"info", "-m", data_file("tiny-q1.gguf"), extra[0], extra[1]});
    EXPECT_EQ(r.exit_code, 2) << extra[0];
    EXPECT_NE(r.err.find("bonsai: error: " + extra[0]), std::string::npos) << r.err;
  }
}

TEST(RopeFlags, ContextBeyondTrainingWarnsHowToExtendIt) {
  const auto r = run_bonsai(
      {"run", "-m", data_file("tiny-q1.gguf"), "-c", "8192", "-p", "hi", "-n", "1", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("n_ctx 8192 is larger than the model's training context 4096; using 4096. "
                       "To extend it, turn on RoPE scaling, e.g. --rope-scaling yarn --rope-scale "
                       "2 --yarn-orig-ctx 4096"),
            std::string::npos)
      << r.err;
  // With scaling the model covers original context x factor: no warning.
  const auto scaled =
      run_bonsai({"run", "-m", data_file("tiny-q1.gguf"), "-c", "8192", "-p", "hi", "-n", "1",
                  "--temp", "0", "--rope-scaling", "yarn", "--rope-scale", "2"});
  ASSERT_EQ(scaled.exit_code, 0) << scaled.err;
  EXPECT_EQ(scaled.err.find("larger than"), std::string::npos) << scaled.err;
}

} // namespace
} // namespace bonsai::test
