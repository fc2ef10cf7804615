// qwen35 on the CUDA plugin, on the fake driver's kernel emulator. Gated like
// the CPU's int8 kernel sets (docs/models.md): cosine >= 0.996 to the float64
// golden logits at every position and top-1 >= 0.85.
#include <gtest/gtest.h>

#include <iomanip>
#include <iostream>

#include "bonsai/engine.hpp"
#include "cuda_test_support.hpp"
#include "fake_driver_support.hpp"
#include "golden.hpp"

namespace {

using namespace cuda_test;
using namespace fake_driver_test;

constexpr int kVocab = 2048;

class CudaQwen35 : public ::testing::TestWithParam<std::string> {};

// `golden`'s model on the CUDA plugin (the fake driver set by the caller).
bonsai::Engine open_on_cuda(const bonsai::test::GoldenCase &golden, int32_t n_batch) {
  bonsai::EngineOptions options;
  options.backend = "cuda";
  options.n_ctx = 64;
  options.n_batch = n_batch;
  return bonsai::Engine::open(golden.gguf_path, options);
}

TEST_P(CudaQwen35, PromptLogitsPassTheFastGate) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const auto golden = bonsai::test::load_golden_case(BONSAI_TEST_DATA_DIR, GetParam(), kVocab);
  const bonsai::Engine engine = open_on_cuda(golden, 48);
  ASSERT_EQ(engine.backend().name, "cuda");
  bonsai::Session session = engine.create_session();
  const std::vector<float> logits = session.eval(golden.prompt, {.all_logits = true}).logits;
  ASSERT_EQ(logits.size(), golden.ref_logits.size());
  double worst = 1.0;
  int top1 = 0;
  for (size_t t = 0; t < golden.prompt.size(); ++t) {
    const float *got = logits.data() + t * kVocab;
    const float *want = golden.ref_logits.data() + t * kVocab;
    worst = std::min(worst, bonsai::test::cosine(got, want, kVocab));
    top1 += bonsai::test::argmax(got, kVocab) == bonsai::test::argmax(want, kVocab);
  }
  std::cout << "[ golden   ] " << GetParam() << " [cuda, fake driver] min cosine " << std::fixed
            << std::setprecision(6) << worst << ", top-1 " << top1 << "/" << golden.prompt.size()
            << "\n";
  EXPECT_GE(worst, 0.996);
  EXPECT_GE(static_cast<double>(top1) / static_cast<double>(golden.prompt.size()), 0.85);
}

INSTANTIATE_TEST_SUITE_P(TinyQwen35, CudaQwen35, ::testing::Values("tiny-q35-q1", "tiny-q35-q2g64"),
                         [](const auto &info) {
                           std::string name = info.param;
                           return bonsai::test::test_name(name);
                         });

// The MTP draft on the CUDA plugin: the trunk's hidden states from its
// layer kinds (ABI 1.3 hidden-states extension), the MTP layer through its
// matmul. The greedy reply is the plain one on the same plugin, the layer's
// proposals (random weights) refused and the cache rolled back. One short
// reply: the emulator takes seconds a step.
TEST(CudaQwen35Mtp, GreedyReplyWithTheMtpDraftIsThePlainOne) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const auto golden = bonsai::test::load_golden_case(BONSAI_TEST_DATA_DIR, "tiny-q35-q1", kVocab);
  const bonsai::Engine engine = open_on_cuda(golden, 16);
  ASSERT_EQ(engine.backend().name, "cuda");
  bonsai::GenerateRequest request;
  request.prompt_tokens = golden.greedy_prompt;
  request.n_predict = 3;
  request.sampling.temperature = 0.0f;
  request.stop_tokens.emplace();
  bonsai::Session plain = engine.create_session();
  const bonsai::GenerateResult want = plain.generate(request);
  request.draft.mtp = true;
  request.draft.adaptive = false;
  request.draft.max = 1;
  request.draft.p_min = 0.0f;
  bonsai::Session session = engine.create_session();
  const bonsai::GenerateResult got = session.generate(request);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_GT(got.stats.drafted_tokens, 0);
}

} // namespace
