// The CPU plugin's f16 KV cache (option kv=f16) against its f32 one and the
// float64 reference: on the exact kernels it must pass the exact gate and stay
// within the f16 rounding of the f32 cache; on the fast kernels it must pass
// the fast cosine gate. Skipped for other plugins ($BONSAI_PLUGIN).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <tuple>

#include "golden.hpp"
#include "plugin_model.hpp"

namespace bonsai::test {
namespace {

constexpr int kGoldenVocab = 2048;

using Param = std::tuple<std::string, std::string>; // model name, kernel set

class KvCacheF16 : public ::testing::TestWithParam<Param> {
protected:
  void SetUp() override {
    if (std::getenv("BONSAI_PLUGIN") != nullptr)
      GTEST_SKIP() << "skipped: BONSAI_PLUGIN is set; kv=f16 is a CPU plugin option";
    const auto &[name, kernels] = GetParam();
    golden_ = load_golden_case(BONSAI_TEST_DATA_DIR, name, kGoldenVocab);
    library_ = std::make_unique<PluginLibrary>(plugin_path_from_env());
    if (const std::string reason = unsupported_option_reason(library_->api(), kernels);
        !reason.empty())
      GTEST_SKIP() << reason;
  }

  // The prompt's logits, prefilled in one step, with the KV cache `kv`.
  std::vector<float> logits(const std::string &kv) const {
    ContextConfig config;
    config.options = std::get<1>(GetParam()) + ";kv=" + kv;
    config.max_context = 64;
    config.max_batch = 48;
    config.n_threads = 2;
    PluginModel model(library_->api(), golden_.gguf_path, config);
    return model.runner().step(golden_.prompt);
  }

  GoldenCase golden_;
  std::unique_ptr<PluginLibrary> library_;
};

TEST_P(KvCacheF16, LogitsStayNextToTheF32CacheAndPassTheGates) {
  const std::vector<float> f32 = logits("f32");
  const std::vector<float> f16 = logits("f16");
  ASSERT_EQ(f16.size(), golden_.prompt.size() * kGoldenVocab);
  ASSERT_EQ(f32.size(), f16.size());
  const bool exact = std::get<1>(GetParam()) == "kernels=reference";
  double min_vs_f32 = 1.0, min_vs_ref = 1.0;
  int top1_vs_ref = 0;
  for (size_t i = 0; i < golden_.prompt.size(); ++i) {
    const float *row = f16.data() + i * kGoldenVocab;
    const float *ref = golden_.ref_logits.data() + i * kGoldenVocab;
    min_vs_f32 = std::min(min_vs_f32, cosine(row, f32.data() + i * kGoldenVocab, kGoldenVocab));
    min_vs_ref = std::min(min_vs_ref, cosine(row, ref, kGoldenVocab));
    top1_vs_ref += argmax(row, kGoldenVocab) == argmax(ref, kGoldenVocab);
  }
  std::cout << "[ kv f16   ] " << std::get<0>(GetParam()) << " [" << std::get<1>(GetParam())
            << "] min cosine vs the f32 cache " << std::fixed << std::setprecision(8) << min_vs_f32
            << ", vs the reference " << min_vs_ref << ", top-1 " << top1_vs_ref << "/"
            << golden_.prompt.size() << "\n";
  if (exact) {
    // Exact attention on f16 keys and values: the exact gate still holds, and
    // the logits move by the f16 rounding alone (1 - cos ~ 2e-7).
    EXPECT_GE(min_vs_ref, 0.99999);
    EXPECT_EQ(top1_vs_ref, static_cast<int>(golden_.prompt.size()));
    EXPECT_GE(min_vs_f32, 0.999999);
  } else {
    // The fast kernels quantize activations to int8: a change as small as the
    // f16 rounding flips some roundings and gives another draw of the same
    // quantization noise (1 - cos ~ 2e-4 against the reference either way),
    // so the f16 cache is held to the fast gate, not to the f32 cache's bits.
    EXPECT_GE(min_vs_ref, 0.9995);
    EXPECT_GE(min_vs_f32, 0.9995);
  }
}

INSTANTIATE_TEST_SUITE_P(TinyModels, KvCacheF16,
                         ::testing::Combine(::testing::Values("tiny-q1", "tiny-q2", "tiny-ptq1",
                                                              "tiny-tq2-mixed", "tiny-q1-yarn"),
                                            ::testing::Values("kernels=reference", "kernels=avx2",
                                                              "kernels=avx512", "kernels=neon")),
                         [](const auto &info) {
                           std::string name =
                               std::get<0>(info.param) + "_" + std::get<1>(info.param).substr(8);
                           return bonsai::test::test_name(name);
                         });

} // namespace
} // namespace bonsai::test
