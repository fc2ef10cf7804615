// bonsai-gguf convert end to end: a converted golden model still matches
// the float64 reference of the original through `bonsai eval` (exact
// kernels), a lossy request fails with the block that prevents it and leaves
// no file, and make-model writes every encoding.
#include <filesystem>

#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

constexpr int kVocab = 2048;

ProcessResult run_gguf_tool(std::vector<std::string> args) {
  args.insert(args.begin(), std::string(BONSAI_BIN_DIR) + "/bonsai-gguf");
  return run_process({std::move(args), {}, milliseconds(180000)});
}

// Min cosine of `model`'s exact logits against golden `name`'s reference.
double min_cosine_against(const std::string &model, const std::string &name) {
  TempDir dir;
  const std::string out = dir.file("logits.f32");
  const auto r = run_bonsai({"eval", "-m", model, "--tokens",
                             join_ids(json_ids(name + ".prompt.json", "tokens")), "--logits", out,
                             "--no-progress", "--backend-options", "kernels=reference"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto got = read_f32(out);
  const auto want = read_f32(data_file(name + ".ref.logits.f32"));
  if (got.size() != want.size() || want.empty())
    return -1.0;
  double worst = 1.0;
  for (size_t pos = 0; pos < want.size() / kVocab; ++pos)
    worst = std::min(worst, cosine(&got[pos * kVocab], &want[pos * kVocab], kVocab));
  return worst;
}

TEST(Convert, TernaryChainKeepsEveryValue) {
  // PTQ1_0 -> mainline Q2_0 (group 64) -> PQ2_0 would fail (two scales per
  // 128), so: PTQ1_0 -> PQ2_0 -> Q2_0 group 64 -> evaluated against PTQ1_0's
  // reference logits.
  TempDir dir;
  const std::string pq2 = dir.file("pq2.gguf"), g64 = dir.file("g64.gguf");
  auto r = run_gguf_tool({"convert", data_file("tiny-ptq1.gguf"), "-o", pq2, "--type", "pq2_0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("30 matrices converted"), std::string::npos) << r.out;
  r = run_gguf_tool({"convert", pq2, "-o", g64, "--type", "q2_0_g64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(min_cosine_against(g64, "tiny-ptq1"), 0.99999);
  const auto info = run_gguf_tool({"info", g64});
  EXPECT_NE(info.out.find("Q2_0 (ternary, 64 per block, mainline llama.cpp)"), std::string::npos);
}

TEST(Convert, LossyRequestNamesTheBlockAndWritesNothing) {
  TempDir dir;
  const std::string out = dir.file("out.gguf");
  const auto r =
      run_gguf_tool({"convert", data_file("tiny-q2g64.gguf"), "-o", out, "--type", "q2_0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("tensor 'token_embd.weight' row 0: cannot convert q2_0_g64 to q2_0 "
                       "without loss: block 0 (elements 0..127) has two scales"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const auto &entry : std::filesystem::directory_iterator(dir.path()))
    ADD_FAILURE() << "left behind: " << entry.path(); // no temp file either
}

TEST(Convert, BadTypeIsAUsageError) {
  TempDir dir;
  const auto r = run_gguf_tool(
      {"convert", data_file("tiny-q2.gguf"), "-o", dir.file("x.gguf"), "--type", "q8_0"});
  EXPECT_EQ(r.exit_code, 2); // a bad value is a usage error, as in bonsai
  EXPECT_NE(r.err.find("--type must be q1_0, q2_0"), std::string::npos) << r.err;
}

TEST(MakeModel, WritesEveryTernaryEncoding) {
  TempDir dir;
  for (const char *type : {"q2_0_g64", "pq2_0", "ptq1_0", "tq1_0", "tq2_0"}) {
    const std::string out = dir.file(std::string(type) + ".gguf");
    const auto r = run_gguf_tool({"make-model", "--vocab", data_file("qwen3-vocab.gguf"), "-o", out,
                                  "--type", type, "--hidden", "256", "--layers", "1", "--heads",
                                  "2", "--kv-heads", "1", "--ffn", "512", "--vocab-size", "512"});
    ASSERT_EQ(r.exit_code, 0) << type << ": " << r.err;
    // The program runs it: a real load through every encoding's path.
    const auto run = run_bonsai({"run", "-m", out, "-p", "hi", "-n", "2", "--temp", "0"});
    EXPECT_EQ(run.exit_code, 0) << type << ": " << run.err;
  }
}

} // namespace
} // namespace bonsai::test
