// Prefill on int8 tensor cores (prefill=int8, the default on 8.0+; the fake
// device is sm_90): a step of 9 or more tokens quantizes each matmul's input
// rows (bonsai_quantize_rows) and runs the int8 GEMMs of
// kernels/matmul_mmq.cuh, never the f16 ones; prefill=f16 runs those
// instead. Both give the reference's greedy tokens and agree on the logits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_driver_support.hpp"
#include "golden.hpp"
#include "tiny_q1_greedy.hpp"

namespace {

using namespace cuda_test;
using namespace fake_driver_test;

struct PrefillRun : TinyQ1Outputs {
  int int8_gemms = 0, f16_gemms = 0, quantized_rows = 0; // kernels run
};

PrefillRun run_tiny_q1(const std::string &plugin_options) {
  const int int8_before = fake_launches("_mmq_"), f16_before = fake_launches("_tc_");
  const int rows_before = fake_launches("bonsai_quantize_rows");
  PrefillRun run;
  static_cast<TinyQ1Outputs &>(run) = tiny_q1_outputs(plugin_options);
  run.int8_gemms = fake_launches("_mmq_") - int8_before;
  run.f16_gemms = fake_launches("_tc_") - f16_before;
  run.quantized_rows = fake_launches("bonsai_quantize_rows") - rows_before;
  return run;
}

TEST(CudaInt8Prefill, TwelveTokensRunOnInt8TensorCoresUnlessF16IsAskedFor) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const PrefillRun int8 = run_tiny_q1("ptx_cache=off");
  const PrefillRun f16 = run_tiny_q1("ptx_cache=off;prefill=f16");
  // tiny-q1 has 4 layers of 7 Q1_0 matrices, gate and up in one launch: 6
  // int8 GEMMs per layer, each after its quantization. The 8-token prompt
  // of the greedy run stays on CUDA cores (fewer than 9 tokens), as does the
  // LM head of the last token.
  EXPECT_EQ(int8.int8_gemms, 24);
  EXPECT_EQ(int8.quantized_rows, 24);
  EXPECT_EQ(int8.f16_gemms, 0);
  EXPECT_EQ(f16.int8_gemms, 0);
  EXPECT_EQ(f16.quantized_rows, 0);
  EXPECT_EQ(f16.f16_gemms, 24);
  EXPECT_EQ(int8.greedy, kTinyQ1Greedy);
  EXPECT_EQ(f16.greedy, kTinyQ1Greedy);
  ASSERT_EQ(int8.prefill_last.size(), f16.prefill_last.size());
  ASSERT_FALSE(int8.prefill_last.empty());
  EXPECT_GT(bonsai::test::cosine(int8.prefill_last.data(), f16.prefill_last.data(),
                                 int8.prefill_last.size()),
            0.9995);
}

} // namespace
