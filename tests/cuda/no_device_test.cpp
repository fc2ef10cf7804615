// The CUDA plugin on a machine without a usable GPU (CI): it loads through
// the host, probes NO_DEVICE with the reason, refuses contexts cleanly, and
// "auto" falls back to the CPU plugin with a log line saying why. On a
// machine with a GPU these tests skip (the device tests cover it there).
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "bonsai/bonsai_backend.h"
#include "bonsai/engine.hpp"
#include "bonsai/log.hpp"
#include "cuda_test_support.hpp"

namespace {

using namespace cuda_test;
using ::testing::AnyOf;
using ::testing::HasSubstr;

// Skips the calling test when a CUDA device is usable here.
#define SKIP_IF_DEVICE_PRESENT()                                                                   \
  do {                                                                                             \
    const bonsai::PluginInfo probe_info = bonsai::inspect_plugin(cuda_plugin());                   \
    if (probe_info.device_ok)                                                                      \
      GTEST_SKIP() << "skipped: a CUDA device is present (" << probe_info.device.name << ")";      \
  } while (0)

class LevelGuard {
public:
  LevelGuard() : saved_(bonsai::log_level()) {}
  ~LevelGuard() { bonsai::set_log_level(saved_); }

private:
  bonsai::LogLevel saved_;
};

bonsai_status probe(bonsai_device_info *info) {
  *info = {};
  info->struct_size = sizeof *info;
  return cuda_api().probe(info);
}

TEST(CudaNoDevice, PluginLoadsThroughTheHostAndProbesNoDeviceWithAReason) {
  SKIP_IF_DEVICE_PRESENT();
  const bonsai::PluginInfo info = bonsai::inspect_plugin(cuda_plugin());
  ASSERT_TRUE(info.loaded) << info.load_error;
  EXPECT_EQ(info.name, "cuda");
  EXPECT_EQ(info.abi_major, static_cast<uint32_t>(BONSAI_ABI_MAJOR));
  EXPECT_FALSE(info.device_ok);
  EXPECT_EQ(info.probe_status, "no device");
  EXPECT_EQ(info.device.device_count, 0u);
  // Without a driver the reason names the library; with a driver but no GPU,
  // cuInit's error or the device count.
  EXPECT_THAT(info.device.detail, AnyOf(HasSubstr("libcuda.so.1 not found"),
                                        HasSubstr("cuInit failed"), HasSubstr("no CUDA device")));
}

TEST(CudaNoDevice, ListPluginsFindsTheCudaPluginInTheBuildTree) {
  const auto plugins = bonsai::list_plugins();
  const auto it = std::find_if(plugins.begin(), plugins.end(),
                               [](const bonsai::PluginInfo &p) { return p.name == "cuda"; });
  ASSERT_NE(it, plugins.end()) << "libbonsai_cuda.so is not in the plugin search path";
  EXPECT_TRUE(it->loaded) << it->load_error;
  EXPECT_EQ(it->path.filename(), "libbonsai_cuda.so");
}

TEST(CudaNoDevice, MissingDriverLibraryIsNamedInTheProbe) {
  const EnvGuard driver("BONSAI_CUDA_DRIVER", "/nonexistent/libcuda.so.1");
  bonsai_device_info info;
  EXPECT_EQ(probe(&info), BONSAI_ERR_NO_DEVICE);
  EXPECT_EQ(info.device_count, 0u);
  EXPECT_THAT(std::string(info.detail), HasSubstr("/nonexistent/libcuda.so.1 not found"));
}

TEST(CudaNoDevice, StubDriverFailsCuInitWithItsErrorName) {
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) != 0)
    GTEST_SKIP() << "skipped: no CUDA toolkit stub driver at " << stub;
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(stub));
  bonsai_device_info info;
  EXPECT_EQ(probe(&info), BONSAI_ERR_NO_DEVICE);
  // The stub's cuInit reports CUDA_ERROR_STUB_LIBRARY (34).
  EXPECT_THAT(std::string(info.detail), HasSubstr("cuInit failed"));
  EXPECT_THAT(std::string(info.detail), HasSubstr("CUDA_ERROR_STUB_LIBRARY (34)"));
}

TEST(CudaNoDevice, CreateContextReportsNoDeviceWithText) {
  SKIP_IF_DEVICE_PRESENT();
  bonsai_context_desc desc{};
  desc.struct_size = sizeof desc;
  desc.max_context = 64;
  desc.max_batch = 8;
  bonsai_context *ctx = reinterpret_cast<bonsai_context *>(0x1);
  char error[256] = {};
  EXPECT_EQ(cuda_api().create_context(&desc, &ctx, error, sizeof error), BONSAI_ERR_NO_DEVICE);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_THAT(std::string(error), HasSubstr("no usable device"));
  // A tiny error buffer is truncated, never overrun.
  char tiny[8];
  std::fill(std::begin(tiny), std::end(tiny), 'x');
  EXPECT_EQ(cuda_api().create_context(&desc, &ctx, tiny, 4), BONSAI_ERR_NO_DEVICE);
  EXPECT_EQ(tiny[3], '\0');
  EXPECT_EQ(tiny[4], 'x');
}

TEST(CudaNoDevice, AutoFallsBackToCpuAndLogsWhyCudaWasSkipped) {
  SKIP_IF_DEVICE_PRESENT();
  LevelGuard guard;
  bonsai::set_log_level(bonsai::LogLevel::info);
  bonsai::EngineOptions options;
  options.backend = "auto";
  options.n_ctx = 64;
  testing::internal::CaptureStderr();
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(engine.backend().name, "cpu");
  EXPECT_THAT(log, HasSubstr("skipping"));
  EXPECT_THAT(log, HasSubstr("libbonsai_cuda.so"));
  EXPECT_THAT(log, HasSubstr("no device"));
}

TEST(CudaNoDevice, ExplicitCudaBackendFailsWithNoDeviceMessage) {
  SKIP_IF_DEVICE_PRESENT();
  bonsai::EngineOptions options;
  options.backend = "cuda";
  options.n_ctx = 64;
  try {
    bonsai::Engine::open(tiny_q1(), options);
    FAIL() << "Engine::open with backend cuda succeeded without a device";
  } catch (const bonsai::PluginError &error) {
    EXPECT_THAT(std::string(error.what()), HasSubstr("libbonsai_cuda.so"));
    EXPECT_THAT(std::string(error.what()), HasSubstr("no device"));
  }
}

} // namespace
