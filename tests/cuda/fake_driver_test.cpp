// The CUDA plugin end to end on the fake driver (fake_driver/): a real
// context with NVRTC-compiled modules, weight upload, out-of-memory
// messages, and the PTX cache across contexts ("a second start does not
// invoke NVRTC"). Skips without NVRTC or where the fake driver is not built
// (sanitizer builds).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "fake_driver_support.hpp"

namespace {

using namespace cuda_test;
using namespace fake_driver_test;
using ::testing::HasSubstr;

TEST(CudaFakeDriver, SecondContextLoadsPtxFromTheCacheWithoutNvrtc) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  TempDir cache;
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const EnvGuard dir("BONSAI_CACHE_DIR", cache.path().string());
  const EnvGuard on("BONSAI_CUDA_CACHE", std::nullopt);
  for (int start = 0; start < 2; ++start) {
    Lines log;
    ASSERT_NO_FATAL_FAILURE(start_and_stop_context(log));
    if (start == 0) {
      // Six programs on the fake sm_90: matmul, layer, tensor-core matmul,
      // int8 GEMV, tensor-core attention, persistent decode (decode=auto).
      EXPECT_EQ(log.count("PTX cache miss"), 6);
      EXPECT_EQ(log.count("NVRTC compile"), 6);
    } else {
      EXPECT_EQ(log.count("PTX cache hit"), 6);
      EXPECT_EQ(log.count("NVRTC compile"), 0);
    }
  }
}

TEST(CudaFakeDriver, CacheOffOptionCompilesEveryTime) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  TempDir cache;
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const EnvGuard dir("BONSAI_CACHE_DIR", cache.path().string());
  Lines log;
  const bonsai_context_desc desc = context_desc(&log, "ptx_cache=off");
  bonsai_context *ctx = nullptr;
  ASSERT_EQ(cuda_api().create_context(&desc, &ctx, nullptr, 0), BONSAI_OK);
  cuda_api().destroy_context(ctx);
  EXPECT_EQ(log.count("PTX cache off: disabled by the context option ptx_cache=off"), 1);
  // base, layer, int8 tensor-core, int8 GEMV, tensor-core attention and
  // persistent decode programs
  EXPECT_EQ(log.count("NVRTC compile"), 6);
  EXPECT_TRUE(std::filesystem::is_empty(cache.path()));
}

TEST(CudaFakeDriver, ReferenceKernelsLeaveTheFastProgramsOut) {
  // kernels=reference keeps every matmul in f32 on CUDA cores (exact
  // tolerances), so none of the tensor-core and int8 programs is compiled
  // or used; tensor_cores=off and int8_gemv=off drop theirs. The fake device
  // is sm_90: prefill runs on int8 tensor cores unless prefill=f16 asks for
  // the f16 ones, its attention on tensor cores unless prefill_attention=cores
  // asks for CUDA cores; decode=persistent, and decode=auto on sm_90, add the
  // persistent program where the int8 GEMVs are on.
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  struct Case {
    const char *options;
    bool f16_tensor_cores, int8_tensor_cores, int8_gemv, attention_tc;
    bool persistent = false;
  };
  // Each program is compiled, or loaded from the suite's PTX cache where an
  // earlier test compiled it: either line names it.
  const auto programs = [](Lines &log, const std::string &name) {
    return log.count("NVRTC compile: " + name) + log.count("PTX cache hit: " + name);
  };
  for (const Case c : {Case{"kernels=reference", false, false, false, false},
                       Case{"tensor_cores=off", false, false, true, false, true},
                       Case{"int8_gemv=off", false, true, false, true},
                       Case{"prefill=f16", true, false, true, true, true},
                       Case{"prefill_attention=cores", false, true, true, false, true},
                       Case{"decode=persistent", false, true, true, true, true},
                       Case{"decode=persistent;int8_gemv=off", false, true, false, true, false},
                       Case{"decode=graph", false, true, true, true, false},
                       Case{"", false, true, true, true, true}}) {
    Lines log;
    const bonsai_context_desc desc = context_desc(&log, c.options);
    bonsai_context *ctx = nullptr;
    ASSERT_EQ(cuda_api().create_context(&desc, &ctx, nullptr, 0), BONSAI_OK);
    cuda_api().destroy_context(ctx);
    EXPECT_EQ(programs(log, ""), 2 + c.f16_tensor_cores + c.int8_tensor_cores + c.int8_gemv +
                                     c.attention_tc + c.persistent)
        << c.options;
    EXPECT_EQ(programs(log, "bonsai_matmul_tc.cu"), c.f16_tensor_cores) << c.options;
    EXPECT_EQ(log.count("prefill on tensor cores"), c.f16_tensor_cores) << c.options;
    EXPECT_EQ(programs(log, "bonsai_matmul_mmq.cu"), c.int8_tensor_cores) << c.options;
    EXPECT_EQ(log.count("prefill on int8 tensor cores"), c.int8_tensor_cores) << c.options;
    EXPECT_EQ(programs(log, "bonsai_gemv_dp4a.cu"), c.int8_gemv) << c.options;
    EXPECT_EQ(log.count("int8 decode GEMVs"), c.int8_gemv) << c.options;
    EXPECT_EQ(programs(log, "bonsai_attention_tc.cu"), c.attention_tc) << c.options;
    EXPECT_EQ(log.count("prefill attention on tensor cores"), c.attention_tc) << c.options;
    EXPECT_EQ(programs(log, "bonsai_decode_persistent.cu"), c.persistent) << c.options;
    EXPECT_EQ(log.count("persistent decode"), c.persistent) << c.options;
  }
}

TEST(CudaFakeDriver, DeviceOutOfMemoryNamesTheWeightTheBytesNeededAndFree) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const EnvGuard memory("BONSAI_FAKE_CUDA_MEMORY", std::string("1000000")); // 1 MB device
  Lines log;
  const bonsai_context_desc desc = context_desc(&log);
  bonsai_context *ctx = nullptr;
  ASSERT_EQ(cuda_api().create_context(&desc, &ctx, nullptr, 0), BONSAI_OK);
  // 2 MB of F32: more than the whole device.
  std::vector<float> data(512 * 1024, 0.5f);
  bonsai_weight_desc w{};
  w.struct_size = sizeof w;
  w.type = 0;
  w.cols = 1024;
  w.rows = 512;
  w.data = data.data();
  w.nbytes = data.size() * sizeof(float);
  w.name = "blk.0.ffn_up.weight";
  bonsai_weight *handle = nullptr;
  EXPECT_EQ(cuda_api().upload_weight(ctx, &w, &handle), BONSAI_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(handle, nullptr);
  const std::string message = cuda_api().last_error(ctx);
  EXPECT_THAT(message, HasSubstr("blk.0.ffn_up.weight"));
  EXPECT_THAT(message, HasSubstr("needed 2097152 bytes"));
  EXPECT_THAT(message, HasSubstr("free of"));
  cuda_api().destroy_context(ctx);
}

TEST(CudaFakeDriver, MatmulRunsThroughTheDriverApi) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  Lines log;
  const bonsai_context_desc desc = context_desc(&log);
  bonsai_context *ctx = nullptr;
  ASSERT_EQ(cuda_api().create_context(&desc, &ctx, nullptr, 0), BONSAI_OK);
  // W = [[1, 2, ..., 32], [-1, -1, ..., -1]] as F32 (a 32-wide row).
  std::vector<float> data(64);
  for (int c = 0; c < 32; ++c) {
    data[c] = static_cast<float>(c + 1);
    data[32 + c] = -1.0f;
  }
  bonsai_weight_desc w{};
  w.struct_size = sizeof w;
  w.type = 0;
  w.cols = 32;
  w.rows = 2;
  w.data = data.data();
  w.nbytes = data.size() * sizeof(float);
  bonsai_weight *handle = nullptr;
  ASSERT_EQ(cuda_api().upload_weight(ctx, &w, &handle), BONSAI_OK) << cuda_api().last_error(ctx);
  // x0 = all ones, x1 = e_3 (only column 3 set).
  std::vector<float> x(64, 0.0f);
  for (int c = 0; c < 32; ++c)
    x[c] = 1.0f;
  x[32 + 3] = 1.0f;
  std::vector<float> y(4, -7.0f);
  bonsai_matmul_desc m{};
  m.struct_size = sizeof m;
  m.weight = handle;
  m.n_tokens = 2;
  m.x = x.data();
  m.y = y.data();
  ASSERT_EQ(cuda_api().matmul(ctx, &m), BONSAI_OK) << cuda_api().last_error(ctx);
  EXPECT_EQ(y[0], 528.0f); // 1 + 2 + ... + 32
  EXPECT_EQ(y[1], -32.0f);
  EXPECT_EQ(y[2], 4.0f); // row 0, column 3
  EXPECT_EQ(y[3], -1.0f);
  cuda_api().destroy_context(ctx);
}

} // namespace
