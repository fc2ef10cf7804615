// A driver that refuses NVRTC's PTX (older than NVRTC:
// CUDA_ERROR_UNSUPPORTED_PTX_VERSION), played by the fake driver with
// BONSAI_FAKE_CUDA_REFUSE_PTX=1: the plugin compiles a CUBIN for the
// device's exact architecture instead, with a warning naming the refusal,
// caches it, loads it without NVRTC on the next start, and decodes the
// reference's greedy continuation from it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "fake_driver_support.hpp"
#include "tiny_q1_greedy.hpp"

namespace {

using namespace cuda_test;
using namespace fake_driver_test;
using ::testing::HasSubstr;
using ::testing::Not;

// The CUBINs NVRTC makes cost seconds each: one test compiles them, loads
// them back from the cache, and decodes with them.
TEST(CudaCubinFallback, RefusedPtxIsReplacedByACachedCubinThatDecodesTheReferenceContinuation) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  TempDir cache;
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const EnvGuard refuse("BONSAI_FAKE_CUDA_REFUSE_PTX", std::string("1"));
  const EnvGuard dir("BONSAI_CACHE_DIR", cache.path().string());
  const EnvGuard on("BONSAI_CUDA_CACHE", std::nullopt);
  for (int start = 0; start < 2; ++start) {
    Lines log;
    ASSERT_NO_FATAL_FAILURE(start_and_stop_context(log));
    if (start == 0) {
      // Six programs (matmul, layer, tensor-core matmul, int8 GEMV,
      // tensor-core attention, and the persistent decode that decode=auto
      // uses on sm_90): each PTX refused, each CUBIN compiled for the fake
      // sm_90.
      EXPECT_EQ(log.count("the driver refused the PTX NVRTC made for"), 6);
      EXPECT_EQ(log.count("(222)"), 6); // CUDA_ERROR_UNSUPPORTED_PTX_VERSION, kept in the message
      EXPECT_EQ(log.count("compiling a CUBIN for sm_90 instead"), 6);
      EXPECT_EQ(log.count("bytes of CUBIN"), 6);
    } else {
      EXPECT_EQ(log.count("PTX cache hit"), 6);
      EXPECT_EQ(log.count("CUBIN"), 6); // the hits name what they loaded
      EXPECT_EQ(log.count("NVRTC compile"), 0);
    }
  }
  // The kernels from the cached CUBINs (nothing compiled again) keep the
  // reference's greedy tokens.
  const LevelGuard level;
  testing::internal::CaptureStderr();
  const bonsai::Engine engine = open_tiny_q1_cuda("");
  bonsai::Session session = engine.create_session();
  const std::vector<int32_t> greedy = tiny_q1_greedy(session);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(greedy, kTinyQ1Greedy);
  EXPECT_THAT(log, HasSubstr("bonsai info: [cuda] CUDA device 0")); // info lines are shown
  EXPECT_THAT(log, Not(HasSubstr("NVRTC compile")));
}

} // namespace
