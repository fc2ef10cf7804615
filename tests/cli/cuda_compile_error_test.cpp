// The bonsai program when NVRTC cannot compile the CUDA plugin's kernels:
// the fake driver gives it a GPU, a stand-in NVRTC fails every compile with
// a compiler log (tests/cuda/fake_driver/failing_nvrtc.cpp). With the
// default backend the run falls back to the CPU plugin before generating,
// with a warning that carries NVRTC's error; with --backend cuda the same
// error ends the command. Child processes: NVRTC is loaded once per process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli_harness.hpp"

namespace {

using namespace bonsai::test;
using ::testing::HasSubstr;

#if defined(BONSAI_FAKE_CUDA_DRIVER) && defined(BONSAI_FAILING_NVRTC)

// Sets the variables for the children of one test, and unsets them after.
class ChildEnvironment {
public:
  ChildEnvironment() {
    setenv("BONSAI_CUDA_DRIVER", BONSAI_FAKE_CUDA_DRIVER, 1);
    setenv("BONSAI_NVRTC", BONSAI_FAILING_NVRTC, 1);
    setenv("BONSAI_CUDA_CACHE", "off", 1); // a cached PTX would skip the compile
  }
  ~ChildEnvironment() {
    unsetenv("BONSAI_CUDA_DRIVER");
    unsetenv("BONSAI_NVRTC");
    unsetenv("BONSAI_CUDA_CACHE");
  }
  ChildEnvironment(const ChildEnvironment &) = delete;
  ChildEnvironment &operator=(const ChildEnvironment &) = delete;
};

std::vector<std::string> tiny_run(const std::string &backend) {
  return {"run",       "-m",   data_file("tiny-q1.gguf"), "-p", "Hello", "-n", "4", "--temp", "0",
          "--backend", backend};
}

TEST(CudaCompileError, AutoFallsBackToTheCpuWithNvrtcsErrorBeforeGenerating) {
  const ChildEnvironment environment;
  const ProcessResult r = run_bonsai(tiny_run("auto"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty()) << "no text was generated";
  EXPECT_THAT(r.err, HasSubstr("backend cuda cannot run this model"));
  EXPECT_THAT(r.err,
              HasSubstr("NVRTC failed to compile bonsai_matmul.cu: NVRTC_ERROR_COMPILATION"));
  EXPECT_THAT(r.err, HasSubstr("this stand-in for NVRTC compiles nothing")); // the compiler log
  EXPECT_THAT(r.err, HasSubstr("falling back to cpu"));
  EXPECT_THAT(r.err, HasSubstr("stats: backend cpu"));
  // The warning comes before any generated text: nothing ran on the GPU.
  EXPECT_LT(r.err.find("falling back to cpu"), r.err.find("stats:"));
}

TEST(CudaCompileError, ExplicitCudaBackendExitsNonZeroNamingTheCompileError) {
  const ChildEnvironment environment;
  const ProcessResult r = run_bonsai(tiny_run("cuda"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.term_signal, 0) << "it crashed";
  EXPECT_THAT(r.err, HasSubstr("NVRTC failed to compile bonsai_matmul.cu"));
  EXPECT_THAT(r.err, HasSubstr("this stand-in for NVRTC compiles nothing"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("falling back")));
}

TEST(CudaCompileError, NglFallsBackWithTheCompileErrorNotANoGpuNote) {
  // A GPU is found, so -ngl picks it; it then cannot run the model, and the
  // warning says why. "no GPU found" would be untrue here.
  const ChildEnvironment environment;
  std::vector<std::string> args = tiny_run("cpu");
  args.insert(args.end(), {"-ngl", "99"});
  const ProcessResult r = run_bonsai(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("NVRTC failed to compile bonsai_matmul.cu"));
  EXPECT_THAT(r.err, HasSubstr("falling back to cpu"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("no GPU found")));
  EXPECT_THAT(r.err, HasSubstr("stats: backend cpu"));
}

#else

TEST(CudaCompileError, NeedsTheFakeDriver) {
  GTEST_SKIP() << "skipped: the fake CUDA driver is not built in this configuration";
}

#endif

} // namespace
