// bonsai eval against the golden float64 reference: logits of every
// position (batched and one token at a time) and the greedy continuation.
#include "cli_harness.hpp"
#include "golden.hpp"

namespace bonsai::test {
namespace {

constexpr int kVocab = 2048; // every golden model (tests/data/README.md)
constexpr int kPromptTokens = 48;

struct EvalCase {
  std::string model; // golden model name, e.g. "tiny-q1"
  bool reference;    // --backend-options kernels=reference
  bool one_by_one;   // --one-by-one
  double min_cosine; // per position
};

std::string case_name(const ::testing::TestParamInfo<EvalCase> &info) {
  std::string name = info.param.model + (info.param.reference ? "_reference" : "_default") +
                     (info.param.one_by_one ? "_one_by_one" : "_batched");
  return bonsai::test::test_name(name);
}

class EvalLogits : public ::testing::TestWithParam<EvalCase> {};

TEST_P(EvalLogits, MatchGoldenReferenceAtEveryPosition) {
  const EvalCase &c = GetParam();
  const auto prompt = json_ids(c.model + ".prompt.json", "tokens");
  ASSERT_EQ(prompt.size(), static_cast<size_t>(kPromptTokens));
  TempDir dir;
  const std::string out_path = dir.file("logits.f32");
  std::vector<std::string> args = {"eval",
                                   "-m",
                                   data_file(c.model + ".gguf"),
                                   "--tokens",
                                   join_ids(prompt),
                                   "--logits",
                                   out_path,
                                   "--no-progress"};
  if (c.reference) {
    args.push_back("--backend-options");
    args.push_back("kernels=reference");
  }
  if (c.one_by_one)
    args.push_back("--one-by-one");
  const auto r = run_bonsai(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "") << "without --greedy nothing goes to stdout";

  const auto got = read_f32(out_path);
  const auto want = read_f32(data_file(c.model + ".ref.logits.f32"));
  ASSERT_EQ(want.size(), static_cast<size_t>(kPromptTokens * kVocab));
  ASSERT_EQ(got.size(), want.size()) << "logits file must be [48][2048] float32";
  for (int pos = 0; pos < kPromptTokens; ++pos) {
    const double cos = cosine(&got[pos * kVocab], &want[pos * kVocab], kVocab);
    EXPECT_GE(cos, c.min_cosine) << "position " << pos;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Eval, EvalLogits,
    ::testing::Values(
        EvalCase{"tiny-q1", true, false, 0.99999}, EvalCase{"tiny-q1", true, true, 0.99999},
        EvalCase{"tiny-q1", false, false, 0.9995}, EvalCase{"tiny-q1", false, true, 0.9995},
        EvalCase{"tiny-q1-tied", true, false, 0.99999}, EvalCase{"tiny-q2", true, false, 0.99999},
        EvalCase{"tiny-q2", false, true, 0.9995}, EvalCase{"tiny-q2g64", true, false, 0.99999},
        EvalCase{"tiny-q2g64", false, true, 0.9995}, EvalCase{"tiny-ptq1", true, false, 0.99999},
        EvalCase{"tiny-ptq1", false, false, 0.9995}, EvalCase{"tiny-tq1", false, true, 0.9995},
        EvalCase{"tiny-tq2-mixed", true, true, 0.99999},
        EvalCase{"tiny-tq2-mixed", false, false, 0.9995}),
    case_name);

class EvalGreedy : public ::testing::TestWithParam<std::string> {};

TEST_P(EvalGreedy, PrintsTheGoldenContinuation) {
  const std::string model = GetParam();
  const auto prompt = json_ids(model + ".ref.greedy.json", "prompt");
  const auto greedy = json_ids(model + ".ref.greedy.json", "greedy");
  ASSERT_EQ(greedy.size(), 24u);
  for (const bool one_by_one : {false, true}) {
    std::vector<std::string> args = {
        "eval",     "-m", data_file(model + ".gguf"), "--tokens",         join_ids(prompt),
        "--greedy", "24", "--backend-options",        "kernels=reference"};
    if (one_by_one)
      args.push_back("--one-by-one");
    const auto r = run_bonsai(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, join_ids(greedy) + "\n") << (one_by_one ? "one by one" : "batched");
  }
}

INSTANTIATE_TEST_SUITE_P(Eval, EvalGreedy,
                         ::testing::Values("tiny-q1", "tiny-q1-tied", "tiny-q2", "tiny-q2g64",
                                           "tiny-pq2", "tiny-ptq1", "tiny-tq1", "tiny-tq2",
                                           "tiny-tq2-mixed", "tiny-f16"),
                         [](const auto &info) {
                           std::string n = info.param;
                           return bonsai::test::test_name(n);
                         });

TEST(Eval, TextPromptIsTokenizedLikeHuggingFace) {
  // tests/data/tokenizer/hf-cases.json: the Hugging Face ids of this text,
  // all inside tiny-q1's 2,000 BPE tokens. -p must evaluate exactly them.
  const std::string text = "1234567890 12 345";
  const std::vector<int32_t> hf_ids = {16, 17,  18, 19, 20,  21, 22, 23, 24,
                                       15, 220, 16, 17, 220, 18, 19, 20};
  TempDir dir;
  const std::string model = data_file("tiny-q1.gguf");
  const auto from_text = run_bonsai({"eval", "-m", model, "-p", text, "--logits", dir.file("a")});
  const auto from_ids =
      run_bonsai({"eval", "-m", model, "--tokens", join_ids(hf_ids), "--logits", dir.file("b")});
  ASSERT_EQ(from_text.exit_code, 0) << from_text.err;
  ASSERT_EQ(from_ids.exit_code, 0) << from_ids.err;
  const auto a = read_f32(dir.file("a"));
  ASSERT_EQ(a.size(), hf_ids.size() * kVocab);
  EXPECT_TRUE(a == read_f32(dir.file("b"))) << "same ids, same backend: identical logits";
}

} // namespace
} // namespace bonsai::test
