// Programmatic dependent launch (option pdl=on): every kernel is launched
// with cuLaunchKernelEx and the programmatic-serialization attribute, and the
// fake driver refuses such a launch of a kernel whose PTX never waits for the
// grid before it (griddepcontrol.wait), so a kernel left without grid_entry()
// fails here. The results are those of ordinary launches.
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

struct PdlRun : TinyQ1Outputs {
  int programmatic_launches = 0; // counted by the fake driver during the run
};

PdlRun run_tiny_q1(const std::string &plugin_options) {
  const int before = live_counts().programmatic_launches;
  PdlRun run;
  static_cast<TinyQ1Outputs &>(run) = tiny_q1_outputs(plugin_options);
  run.programmatic_launches = live_counts().programmatic_launches - before;
  return run;
}

TEST(CudaProgrammaticLaunch, EveryKernelWaitsForTheGridBeforeItAndResultsAreUnchanged) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const PdlRun plain = run_tiny_q1("");
  const PdlRun overlapped = run_tiny_q1("pdl=on");
  EXPECT_EQ(plain.programmatic_launches, 0);
  // Every launch of the run (prefill, decode, the captured graph): dozens.
  EXPECT_GT(overlapped.programmatic_launches, 50);
  EXPECT_EQ(plain.greedy, kTinyQ1Greedy);
  EXPECT_EQ(overlapped.greedy, kTinyQ1Greedy);
  // The same kernels on the same data: bit for bit.
  ASSERT_FALSE(plain.prefill_last.empty());
  EXPECT_EQ(overlapped.prefill_last, plain.prefill_last);
}

} // namespace
