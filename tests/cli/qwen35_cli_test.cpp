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

// --draft-mtp (docs/speculative.md): the model's own MTP layer proposes,
// and the greedy text of run and of two chat turns is the plain one.
TEST(Qwen35Cli, TheMtpDraftKeepsTheGreedyText) {
  const std::vector<std::string> draft = {"--draft-mtp", "--draft-fixed", "--draft-max",
                                          "2",           "--draft-p-min", "0"};
  // Greedy on the exact kernels, as both commands run.
  const std::vector<std::string> greedy = {"-m",
                                           kQ35,
                                           "--temp",
                                           "0",
                                           "--ignore-eos",
                                           "--no-progress",
                                           "--backend-options",
                                           "kernels=reference"};
  std::vector<std::string> run = {"run", "-p", "Hello", "-n", "12", "--no-chat"};
  run.insert(run.end(), greedy.begin(), greedy.end());
  const auto plain = run_bonsai(run);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  run.insert(run.end(), draft.begin(), draft.end());
  const auto drafted = run_bonsai(run);
  ASSERT_EQ(drafted.exit_code, 0) << drafted.err;
  EXPECT_EQ(drafted.out, plain.out);
  EXPECT_GT(number_after(drafted.err, "| draft "), 0) << drafted.err;

  std::vector<std::string> chat = {"chat", "-n", "8"};
  chat.insert(chat.end(), greedy.begin(), greedy.end());
  const std::string input = "Hello\nHi again\n";
  const auto plain_chat = run_bonsai(chat, input);
  ASSERT_EQ(plain_chat.exit_code, 0) << plain_chat.err;
  chat.insert(chat.end(), draft.begin(), draft.end());
  const auto drafted_chat = run_bonsai(chat, input);
  ASSERT_EQ(drafted_chat.exit_code, 0) << drafted_chat.err;
  EXPECT_EQ(drafted_chat.out, plain_chat.out);
}

TEST(Qwen35Cli, TheMtpDraftNeedsAnMtpLayerAndNoDraftModel) {
  const auto qwen3 = run_bonsai({"run", "-m", data_file("tiny-q1.gguf"), "-p", "Hello", "-n", "2",
                                 "--draft-mtp", "--no-progress"});
  EXPECT_EQ(qwen3.exit_code, 1) << qwen3.err;
  EXPECT_NE(qwen3.err.find("--draft-mtp needs a model with a multi-token-prediction layer"),
            std::string::npos)
      << qwen3.err;
  EXPECT_NE(qwen3.err.find("this qwen3 model has none"), std::string::npos) << qwen3.err;
  const auto both =
      run_bonsai({"run", "-m", kQ35, "-p", "Hello", "-n", "2", "--draft-mtp", "-md", kQ35});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_NE(both.err.find("--draft-mtp and -md/--model-draft exclude each other"),
            std::string::npos)
      << both.err;
}

// bench --draft-mtp: the tg row is followed by its gen and gen+draft rows.
TEST(Qwen35Cli, BenchMeasuresTheMtpDraft) {
  const auto r = run_bonsai({"bench", "-m", kQ35, "-p", "0", "-n", "8", "-r", "1", "--draft-mtp",
                             "--draft-p-min", "0", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[2]["test"], "tg8 gen+draft") << r.out;
  EXPECT_NE(r.err.find("tg8 gen+draft: "), std::string::npos) << r.err;
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
  EXPECT_NE(r.out.find("attention:     1 gated attention layers, 32 rotary dims; 1 MTP layer(s), "
                       "run only as a draft (--draft-mtp)\n"),
            std::string::npos)
      << r.out;
}

} // namespace
} // namespace bonsai::test
