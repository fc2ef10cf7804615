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

struct PdlRun {
  std::vector<int32_t> greedy;     // tiny-q1's greedy continuation
  std::vector<float> prefill_last; // logits of the last token of a 12-token prefill
  int programmatic_launches = 0;   // counted by the fake driver during the run
};

PdlRun run_tiny_q1(const std::string &plugin_options) {
  const int before = live_counts().programmatic_launches;
  bonsai::EngineOptions options;
  options.backend = "cuda";
  options.n_ctx = 64;
  options.n_batch = 16;
  options.plugin_options = plugin_options;
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  PdlRun run;
  {
    bonsai::Session session = engine.create_session();
    run.greedy = tiny_q1_greedy(session);
  }
  {
    // 12 tokens: the prefill runs on the tensor-core kernels.
    std::vector<int32_t> prompt = kTinyQ1Prompt;
    prompt.insert(prompt.end(), {17, 400, 1021, 158});
    bonsai::Session session = engine.create_session();
    run.prefill_last = session.eval(prompt).logits;
  }
  run.programmatic_launches = live_counts().programmatic_launches - before;
  return run;
}

TEST(CudaProgrammaticLaunch, EveryKernelWaitsForTheGridBeforeItAndResultsAreUnchanged) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const PdlRun plain = run_tiny_q1("ptx_cache=off");
  const PdlRun overlapped = run_tiny_q1("ptx_cache=off;pdl=on");
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
