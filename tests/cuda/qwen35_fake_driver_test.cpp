// qwen35 on the CUDA plugin, on the fake driver's kernel emulator: the host
// runs the gated DeltaNet and gated attention layers and the plugin every
// projection and the LM head. Gated like the CPU's int8 kernel sets
// (docs/models.md): cosine >= 0.996 to the float64 golden logits at every
// position and top-1 >= 0.85.
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

TEST_P(CudaQwen35, PromptLogitsPassTheFastGate) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const auto golden = bonsai::test::load_golden_case(BONSAI_TEST_DATA_DIR, GetParam(), kVocab);
  bonsai::EngineOptions options;
  options.backend = "cuda";
  options.n_ctx = 64;
  options.n_batch = 48;
  const bonsai::Engine engine = bonsai::Engine::open(golden.gguf_path, options);
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

} // namespace
