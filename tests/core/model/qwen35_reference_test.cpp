// The float64 qwen35 reference (conformance/support/reference_qwen35.hpp)
// against the golden data computed by another float64 implementation
// (tests/data/README.md), and its two forms of the gated DeltaNet against
// each other. Everything faster is then checked against this reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "bonsai/core/gguf.hpp"
#include "golden.hpp"
#include "reference_qwen35.hpp"

namespace bonsai::test {
namespace {

constexpr int kVocab = 2048;

class Qwen35Reference : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    golden_ = load_golden_case(BONSAI_TEST_DATA_DIR, GetParam(), kVocab);
    const gguf::File file = gguf::File::open(golden_.gguf_path);
    model_ = RefQwen35Model::load(file);
  }

  GoldenCase golden_;
  RefQwen35Model model_;
};

TEST_P(Qwen35Reference, PromptLogitsMatchTheGoldenFloat64Logits) {
  RefQwen35 ref(model_);
  const auto logits = ref.forward(golden_.prompt);
  ASSERT_EQ(logits.size(), golden_.prompt.size());
  double worst = 1.0;
  for (size_t t = 0; t < logits.size(); ++t) {
    const float *want = golden_.ref_logits.data() + t * kVocab;
    const double c = cosine(logits[t].data(), want, kVocab);
    worst = std::min(worst, c);
    EXPECT_GE(c, 0.99999) << "position " << t;
    EXPECT_EQ(argmax(logits[t].data(), kVocab), argmax(want, kVocab)) << "position " << t;
  }
  std::cout << "[ golden   ] " << GetParam() << " float64 reference: min cosine " << worst << "\n";
}

TEST_P(Qwen35Reference, GreedyContinuationMatchesTheGoldenOne) {
  RefQwen35 ref(model_);
  auto logits = ref.forward(golden_.greedy_prompt);
  std::vector<int32_t> generated;
  while (generated.size() < golden_.greedy.size()) {
    generated.push_back(argmax(logits.back().data(), kVocab));
    logits = ref.forward({generated.back()});
  }
  EXPECT_EQ(generated, golden_.greedy);
}

// The chunk form is exact algebra, so both forms agree to rounding, however
// the prompt is cut into chunks (one partial chunk, several, uneven ones).
TEST_P(Qwen35Reference, ChunkFormEqualsTheRecurrence) {
  RefQwen35 recurrent(model_);
  const auto want = recurrent.forward(golden_.prompt);
  for (int chunk : {64, 16, 5}) {
    RefQwen35 chunked(model_, chunk);
    const auto got = chunked.forward(golden_.prompt);
    double worst = 0.0;
    for (size_t t = 0; t < got.size(); ++t)
      for (int i = 0; i < kVocab; ++i)
        worst = std::max(
            worst, std::fabs(got[t][static_cast<size_t>(i)] - want[t][static_cast<size_t>(i)]));
    EXPECT_LT(worst, 1e-9) << "chunks of " << chunk;
    // The states they leave agree too: the next token sees no difference.
    const auto next_chunked = chunked.forward({7});
    const auto next_recurrent = RefQwen35(recurrent).forward({7});
    for (int i = 0; i < kVocab; ++i)
      ASSERT_NEAR(next_chunked[0][static_cast<size_t>(i)],
                  next_recurrent[0][static_cast<size_t>(i)], 1e-9);
  }
}

// After the golden prompt, every DeltaNet layer carries a live conv window
// and state: the gates downstream exercise state that matters.
TEST_P(Qwen35Reference, PromptLeavesNonZeroConvAndState) {
  RefQwen35 ref(model_);
  ref.forward(std::vector<int32_t>(golden_.prompt.begin(), golden_.prompt.begin() + 40));
  int recurrent_layers = 0;
  for (size_t l = 0; l < model_.layers.size(); ++l) {
    if (!model_.layers[l].recurrent)
      continue;
    ++recurrent_layers;
    const auto nonzero = [](const std::vector<double> &v) {
      return std::count_if(v.begin(), v.end(), [](double e) { return e != 0.0; });
    };
    EXPECT_EQ(nonzero(ref.state().conv[l]), static_cast<long>(ref.state().conv[l].size()));
    EXPECT_GT(nonzero(ref.state().ssm[l]), static_cast<long>(ref.state().ssm[l].size() / 2));
  }
  EXPECT_EQ(recurrent_layers, 3);
}

INSTANTIATE_TEST_SUITE_P(TinyQwen35, Qwen35Reference,
                         ::testing::Values("tiny-q35-q1", "tiny-q35-q2g64"), [](const auto &info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

} // namespace
} // namespace bonsai::test
