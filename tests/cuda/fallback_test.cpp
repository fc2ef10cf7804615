// Failures of the CUDA plugin after a successful probe, through the host on
// the fake driver: out of device memory while uploading weights or
// allocating the KV cache, a PTX the driver refuses, a launch that fails
// during decode. With "auto" the host falls back to the CPU plugin with a
// warning naming the cause before any token is generated, and the device
// memory of the failed attempt is given back; with "cuda" the same cause is
// the error. The expected tokens are the float64 reference's greedy
// continuation of tiny-q1 (tests/data/tiny-q1.ref.greedy.json).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "bonsai/engine.hpp"
#include "bonsai/log.hpp"
#include "cuda_test_support.hpp"
#include "fake_driver_support.hpp"
#include "tiny_q1_greedy.hpp"

namespace {

using namespace cuda_test;
using namespace fake_driver_test;
using ::testing::HasSubstr;

bonsai::EngineOptions options_for(const std::string &backend, int32_t n_ctx = 64,
                                  int32_t n_batch = 16, const std::string &plugin_options = "") {
  bonsai::EngineOptions options;
  options.backend = backend;
  options.n_ctx = n_ctx;
  options.n_batch = n_batch;
  options.plugin_options = plugin_options;
  return options;
}

// A fault for the CUDA plugin and what the fallback must say about it.
struct Fault {
  const char *name;
  std::vector<std::pair<const char *, const char *>> environment;
  bonsai::EngineOptions options;
  const char *cause; // in the warning ("auto") and in the error ("cuda")
};

std::vector<Fault> faults() {
  return {
      {"weight upload out of memory",
       {{"BONSAI_FAKE_CUDA_MEMORY", "1048576"}},
       options_for("auto"),
       "out of device memory allocating weight"},
      // Room for the weights and activations of 8 tokens, not for 4,096
      // positions of keys and values (32 MiB).
      {"KV cache out of memory",
       {{"BONSAI_FAKE_CUDA_MEMORY", "8388608"}},
       options_for("auto", 4096, 8),
       "out of device memory allocating KV cache"},
      // Without the PTX cache: a refused cached entry would be deleted, and
      // the suite's other tests share that cache.
      {"PTX refused",
       {{"BONSAI_FAKE_CUDA_FAIL", "cuModuleLoadData=218"}},
       options_for("auto", 64, 16, "ptx_cache=off"),
       "cuModuleLoadData"},
  };
}

TEST(CudaFallback, AutoFallsBackToCpuBeforeGeneratingAndNamesTheCause) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const LevelGuard level;
  for (const Fault &fault : faults()) {
    SCOPED_TRACE(fault.name);
    const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), fault.options);
    ASSERT_EQ(engine.backend().name, "cuda"); // the probe found the fake GPU
    const bonsai_fake_cuda_counts_t before = live_counts();
    std::vector<std::unique_ptr<EnvGuard>> environment;
    for (const auto &[name, value] : fault.environment)
      environment.push_back(std::make_unique<EnvGuard>(name, std::string(value)));

    testing::internal::CaptureStderr();
    bonsai::Session session = engine.create_session();
    const std::string log = testing::internal::GetCapturedStderr();
    environment.clear();

    EXPECT_EQ(engine.backend().name, "cpu");
    EXPECT_THAT(log, HasSubstr("backend cuda cannot run this model"));
    EXPECT_THAT(log, HasSubstr(fault.cause));
    EXPECT_THAT(log, HasSubstr("falling back to cpu"));
    const bonsai_fake_cuda_counts_t after = live_counts();
    EXPECT_EQ(after.allocations, before.allocations) << "device memory of the failed attempt";
    EXPECT_EQ(after.modules, before.modules);
    EXPECT_EQ(tiny_q1_greedy(session), kTinyQ1Greedy);
    // Later sessions of this engine start on the CPU plugin directly.
    testing::internal::CaptureStderr();
    bonsai::Session second = engine.create_session();
    EXPECT_THAT(testing::internal::GetCapturedStderr(), testing::Not(HasSubstr("falling back")));
    EXPECT_EQ(tiny_q1_greedy(second), kTinyQ1Greedy);
  }
}

TEST(CudaFallback, ExplicitCudaBackendFailsWithTheCauseAndLeaksNothing) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  for (Fault fault : faults()) {
    SCOPED_TRACE(fault.name);
    fault.options.backend = "cuda";
    const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), fault.options);
    const bonsai_fake_cuda_counts_t before = live_counts();
    std::vector<std::unique_ptr<EnvGuard>> environment;
    for (const auto &[name, value] : fault.environment)
      environment.push_back(std::make_unique<EnvGuard>(name, std::string(value)));
    try {
      engine.create_session();
      ADD_FAILURE() << "create_session succeeded despite the fault";
    } catch (const bonsai::PluginError &error) {
      EXPECT_THAT(std::string(error.what()), HasSubstr(fault.cause));
      EXPECT_THAT(std::string(error.what()), HasSubstr("libbonsai_cuda.so"));
    }
    environment.clear();
    EXPECT_EQ(engine.backend().name, "cuda");
    const bonsai_fake_cuda_counts_t after = live_counts();
    EXPECT_EQ(after.allocations, before.allocations);
    EXPECT_EQ(after.modules, before.modules);
  }
}

// A launch that fails during decode cannot fall back (tokens were already
// generated): the step's error names the launch and the driver's code, the
// failed step leaves the KV cache as it was, and the session goes on once
// the device works again. Under decode=auto a decode step is one
// cooperative launch of the persistent kernel (cuLaunchKernelEx); under
// decode=graph it replays the captured graph.
TEST(CudaFallback, LaunchFailureDuringDecodeNamesTheLaunchAndLosesNoPosition) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  for (const auto &[options, launch] : {std::pair<std::string, std::string>{"", "cuLaunchKernelEx"},
                                        {"decode=graph", "cuGraphLaunch"}}) {
    SCOPED_TRACE(launch);
    const bonsai::Engine engine =
        bonsai::Engine::open(tiny_q1(), options_for("auto", 64, 16, options));
    bonsai::Session session = engine.create_session();
    ASSERT_EQ(engine.backend().name, "cuda");
    const int32_t first = session.eval_argmax(kTinyQ1Prompt);
    EXPECT_EQ(first, kTinyQ1Greedy[0]);
    const int32_t position = session.position();
    {
      // 719 = CUDA_ERROR_LAUNCH_FAILED.
      const EnvGuard fail("BONSAI_FAKE_CUDA_FAIL", launch + "=719");
      try {
        session.eval_argmax(std::vector<int32_t>{first});
        ADD_FAILURE() << "the decode step succeeded despite the failed launch";
      } catch (const bonsai::PluginError &error) {
        EXPECT_THAT(std::string(error.what()), HasSubstr(launch));
        EXPECT_THAT(std::string(error.what()), HasSubstr("719"));
      }
    }
    EXPECT_EQ(session.position(), position);
    EXPECT_EQ(session.eval_argmax(std::vector<int32_t>{first}), kTinyQ1Greedy[1]);
    EXPECT_EQ(session.position(), position + 1);
  }
}

} // namespace
