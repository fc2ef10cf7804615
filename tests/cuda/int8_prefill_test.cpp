// Prefill on int8 tensor cores (prefill=int8, the default on 8.0+; the fake
// device is sm_90): a step of 9 or more tokens quantizes each matmul's input
// rows (bonsai_quantize_rows) and runs the int8 GEMMs of
// kernels/matmul_mmq.cuh, never the f16 ones; prefill=f16 runs those
// instead. Both give the reference's greedy tokens and agree on the logits.
// A step of up to 8 tokens runs on the int8 GEMVs instead.
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
  // kernels run: tensor-core GEMMs, their input quantizations, int8 GEMVs,
  // CUDA-core Q1_0 GEMMs (f32 activations)
  int int8_gemms = 0, f16_gemms = 0, quantized_rows = 0, int8_gemvs = 0, f32_gemms = 0;
};

int f32_q1_gemm_launches() {
  return fake_launches("bonsai_gemm_q1_0") + fake_launches("bonsai_gemm_swiglu_q1_0");
}

PrefillRun run_tiny_q1(const std::string &plugin_options) {
  const int int8_before = fake_launches("_mmq_"), f16_before = fake_launches("_tc_");
  const int rows_before = fake_launches("bonsai_quantize_rows");
  const int gemv_before = fake_launches("_dp4a_"), f32_before = f32_q1_gemm_launches();
  PrefillRun run;
  static_cast<TinyQ1Outputs &>(run) = tiny_q1_outputs(plugin_options);
  run.int8_gemms = fake_launches("_mmq_") - int8_before;
  run.f16_gemms = fake_launches("_tc_") - f16_before;
  run.quantized_rows = fake_launches("bonsai_quantize_rows") - rows_before;
  run.int8_gemvs = fake_launches("_dp4a_") - gemv_before;
  run.f32_gemms = f32_q1_gemm_launches() - f32_before;
  return run;
}

TEST(CudaInt8Prefill, TwelveTokensRunOnInt8TensorCoresUnlessF16OrNoneIsAskedFor) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const PrefillRun int8 = run_tiny_q1("decode=graph");
  const PrefillRun f16 = run_tiny_q1("decode=graph;prefill=f16");
  // The launch-by-launch path (decode=graph: under the default, decode=auto,
  // steps of 2 to 8 tokens run the persistent kernel on the fake sm_90).
  // tiny-q1 has 4 layers of 7 Q1_0 matrices, gate and up in one launch: 6
  // int8 GEMMs per layer, each after its quantization. The 8-token prompt
  // of the greedy run (fewer than 9 tokens) and the 3 decode steps after it
  // run on the int8 GEMVs, one token per grid row: Q/K/V, O, gate/up and
  // down are 4 launches per layer, so 4 x 4 x 4 steps, plus the Q1_0 LM head
  // of each step's one output row (4 greedy steps, the 12-token prefill's
  // last token): 69. No step falls back to the CUDA-core GEMM of f32
  // activations.
  EXPECT_EQ(int8.int8_gemvs, 69);
  EXPECT_EQ(int8.f32_gemms, 0);
  EXPECT_EQ(int8.int8_gemms, 24);
  EXPECT_EQ(int8.quantized_rows, 24);
  EXPECT_EQ(int8.f16_gemms, 0);
  EXPECT_EQ(f16.int8_gemms, 0);
  EXPECT_EQ(f16.quantized_rows, 0);
  EXPECT_EQ(f16.f16_gemms, 24);
  EXPECT_EQ(int8.greedy, kTinyQ1Greedy);
  EXPECT_EQ(f16.greedy, kTinyQ1Greedy);
  // Without tensor cores, the 12-token prefill runs the int8 GEMVs 8 and 4
  // tokens at a time: Q, K, V, O, gate/up and down (the norm apart, more
  // than 8 tokens) twice per layer, 48 launches and one more for its LM
  // head; no CUDA-core GEMM.
  const PrefillRun no_tc = run_tiny_q1("decode=graph;tensor_cores=off");
  EXPECT_EQ(no_tc.int8_gemms + no_tc.f16_gemms + no_tc.quantized_rows, 0);
  EXPECT_EQ(no_tc.f32_gemms, 0);
  EXPECT_EQ(no_tc.int8_gemvs, 69 - 1 + 48 + 1);
  EXPECT_EQ(no_tc.greedy, kTinyQ1Greedy);
  ASSERT_EQ(no_tc.prefill_last.size(), int8.prefill_last.size());
  EXPECT_GT(bonsai::test::cosine(no_tc.prefill_last.data(), int8.prefill_last.data(),
                                 int8.prefill_last.size()),
            0.9995);
  ASSERT_EQ(int8.prefill_last.size(), f16.prefill_last.size());
  ASSERT_FALSE(int8.prefill_last.empty());
  EXPECT_GT(bonsai::test::cosine(int8.prefill_last.data(), f16.prefill_last.data(),
                                 int8.prefill_last.size()),
            0.9995);
}

} // namespace
