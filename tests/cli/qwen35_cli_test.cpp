// The bonsai program on qwen35 files: eval's greedy ids are the float64
// reference's, run streams text, bench measures both tests.
#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "mini_json.hpp"

namespace bonsai::test {
namespace {

const std::string kQ35 = data_file("tiny-q35-q1.gguf");

TEST(Qwen35Cli, EvalGreedyIsTheReferenceContinuation) {
  const auto golden = mini_json::parse_file(data_file("tiny-q35-q1.ref.greedy.json"));
  const auto prompt = golden["prompt"].as_int_vector<int32_t>();
  const auto greedy = golden["greedy"].as_int_vector<int32_t>();
  const auto r = run_bonsai({"eval", "-m", kQ35, "--tokens", join_ids(prompt), "--greedy", "24",
                             "--backend-options", "kernels=reference"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, join_ids(greedy) + "\n");
}

TEST(Qwen35Cli, RunStreamsTextAndStats) {
  const auto r = run_bonsai({"run", "-m", kQ35, "-p", "Hello", "-n", "8", "--temp", "0",
                             "--ignore-eos", "--no-progress"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(r.out.size(), 1u);
  EXPECT_EQ(number_after(r.err, "| generated "), 8) << r.err;
}

TEST(Qwen35Cli, BenchMeasuresPromptAndGeneration) {
  const auto r = run_bonsai({"bench", "-m", kQ35, "-p", "16", "-n", "8", "-r", "1", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  for (const auto &row : rows)
    EXPECT_GT(row["avg_ts"].get<double>(), 0.0) << row.dump();
}

} // namespace
} // namespace bonsai::test

namespace bonsai::test {
namespace {

TEST(Qwen35Cli, InfoNamesTheLayerKinds) {
  const auto r = run_bonsai({"info", "-m", data_file("tiny-q35-q1.gguf")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("architecture:  qwen35\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deltanet:      3 gated DeltaNet layers, 2 q/k and 4 value heads of 64, "
                       "conv 4\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("attention:     1 gated attention layers, 32 rotary dims; 1 MTP layer(s) "
                       "not run\n"),
            std::string::npos)
      << r.out;
}

} // namespace
} // namespace bonsai::test
