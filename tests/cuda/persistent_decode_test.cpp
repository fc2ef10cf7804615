// decode=persistent on the fake driver: every layer of a step of up to 8
// tokens in one launch of kernels/persistent.cuh, its blocks alive at once
// in the fiber emulator (random visiting order, a block's stores hidden from
// the others until it fences, time passing only when every block waits).
// The clean run keeps the float64 reference's greedy tokens; each injected
// synchronization fault (BONSAI_FAKE_CUDA_PERSISTENT_FAULT) changes the
// numbers, which shows the emulator would catch a kernel that made it; a
// lost counter update stalls the launch, which reports where and is run
// again launch by launch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "bonsai/log.hpp"
#include "fake_driver_support.hpp"
#include "tiny_q1_greedy.hpp"

namespace {

using namespace cuda_test;
using namespace fake_driver_test;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char *kPersistent = "decode=persistent";
constexpr const char *kKernel = "bonsai_decode_persistent";

// The logits of the last token of the 8-token prompt, evaluated in one step.
std::vector<float> prompt_logits(const bonsai::Engine &engine) {
  bonsai::Session session = engine.create_session();
  return session.eval(kTinyQ1Prompt).logits;
}

double cosine(const std::vector<float> &a, const std::vector<float> &b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Tiny-q1's greedy continuation with `options`, checked against the
// reference's tokens, and the plugin's log at `level` while it ran.
std::string log_of_greedy(const std::string &options,
                          bonsai::LogLevel level = bonsai::LogLevel::info) {
  const bonsai::LogLevel saved = bonsai::log_level();
  bonsai::set_log_level(level);
  testing::internal::CaptureStderr();
  std::vector<int32_t> greedy;
  {
    const bonsai::Engine engine = open_tiny_q1_cuda(options);
    bonsai::Session session = engine.create_session();
    greedy = tiny_q1_greedy(session);
  }
  const std::string log = testing::internal::GetCapturedStderr();
  bonsai::set_log_level(saved);
  EXPECT_EQ(greedy, kTinyQ1Greedy) << options;
  return log;
}

TEST(CudaPersistentDecode, EveryStepIsOneLaunchAndTheGreedyTokensAreTheReferences) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  // With the LM head and argmax in the launch (the default) a step is that
  // launch alone; with persistent_head=off the LM head's GEMV and argmax
  // follow it. Prefetching the next weights to L2 changes no number.
  for (const auto &[options, after] :
       {std::pair<std::string, int>{kPersistent, 0},
        {std::string(kPersistent) + ";persistent_head=off", 4},
        {std::string(kPersistent) + ";persistent_prefetch=next", 0}}) {
    const bonsai::Engine engine = open_tiny_q1_cuda(options);
    bonsai::Session session = engine.create_session();
    const int persistent_before = fake_launches(kKernel);
    const int attention_before = fake_launches("bonsai_attention");
    const int gemv_before = fake_launches("bonsai_gemv");
    const int argmax_before = fake_launches("bonsai_argmax");
    EXPECT_EQ(tiny_q1_greedy(session), kTinyQ1Greedy) << options;
    // The 8-token prompt and three single tokens: four launches, and no
    // attention or GEMV launch of the kernel-per-operation path.
    EXPECT_EQ(fake_launches(kKernel) - persistent_before, 4) << options;
    EXPECT_EQ(fake_launches("bonsai_attention") - attention_before, 0) << options;
    EXPECT_EQ(fake_launches("bonsai_gemv") - gemv_before, after) << options;
    EXPECT_EQ(fake_launches("bonsai_argmax") - argmax_before, after) << options;
  }
}

// decode=auto: steps of several tokens on the persistent kernel, single
// tokens from persistent_single_from on (by default from the first
// position, at every width): the 8-token prompt and tiny-q1's three single
// tokens are four launches; from 9, the token at 8 cached positions takes
// the graph path and those at 9 and 10 do not.
TEST(CudaPersistentDecode, AutoTakesSingleTokensFromTheirContextLengthOn) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  for (const auto &[options, launches] : {std::pair<std::string, int>{"decode=auto", 4},
                                          {"persistent_single_from=9", 3},
                                          {"persistent_single_from=1", 4}}) {
    const bonsai::Engine engine = open_tiny_q1_cuda(options);
    bonsai::Session session = engine.create_session();
    const int before = fake_launches(kKernel);
    EXPECT_EQ(tiny_q1_greedy(session), kTinyQ1Greedy) << options;
    EXPECT_EQ(fake_launches(kKernel) - before, launches) << options;
  }
}

TEST(CudaPersistentDecode, LogitsDoNotDependOnTheBlockOrderAndStayNextToTheGraphPath) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const std::vector<float> graph = prompt_logits(open_tiny_q1_cuda(""));
  std::vector<float> first;
  for (const char *seed : {"1", "7", "12345"}) {
    SCOPED_TRACE(seed);
    const EnvGuard order("BONSAI_FAKE_CUDA_SEED", std::string(seed));
    const std::vector<float> persistent = prompt_logits(open_tiny_q1_cuda(kPersistent));
    ASSERT_EQ(persistent.size(), graph.size());
    // Every output is summed by one warp in a fixed order: the blocks'
    // interleaving cannot change a bit.
    if (first.empty())
      first = persistent;
    EXPECT_EQ(persistent, first);
    // Both quantize the same inputs to int8; the persistent kernel applies
    // 1/rms to the sums instead of the inputs, so they differ by roundings.
    EXPECT_GT(cosine(persistent, graph), 0.9999);
  }
}

// persistent_shares=balanced: the plans share each matmul stage out in
// units of 2 rows (tiny-q1's inputs are 4 and 12 blocks of 128 wide) spread
// evenly over the blocks; the greedy tokens stay the reference's.
TEST(CudaPersistentDecode, BalancedSharesKeepTheReferenceTokens) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const std::string log = log_of_greedy(std::string(kPersistent) + ";persistent_shares=balanced",
                                        bonsai::LogLevel::debug);
  EXPECT_THAT(log, HasSubstr("a plan for 1 sequence(s), 1 token(s) and 2 key range(s) a step with "
                             "the LM head, balanced shares of 2-row units"));
}

// persistent_stream=3: the weight buffer cut into three slots, each block's
// next two instructions' weights copying while it waits; the greedy tokens
// stay the reference's.
TEST(CudaPersistentDecode, WeightsStreamedAheadKeepTheReferenceTokens) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const std::string log =
      log_of_greedy(std::string(kPersistent) + ";persistent_stream=3", bonsai::LogLevel::debug);
  EXPECT_THAT(log, HasSubstr("a plan for 1 sequence(s), 1 token(s) and 2 key range(s) a step with "
                             "the LM head: "));
  EXPECT_THAT(log, HasSubstr(" in 3 slots, the next 2 instructions' weights streamed ahead"));
  EXPECT_THAT(log, Not(HasSubstr("does not fit")));
}

// persistent_qkv=fused: each layer's Q/K/V and attention one stage, an
// instruction per (KV head, key range): tiny-q1's 2 KV heads in 2 ranges on
// the fake device's 4 blocks. The greedy tokens stay the reference's.
TEST(CudaPersistentDecode, QkvFusedWithAttentionKeepsTheReferenceTokens) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const std::string log =
      log_of_greedy(std::string(kPersistent) + ";persistent_qkv=fused", bonsai::LogLevel::debug);
  EXPECT_THAT(log, HasSubstr("a plan for 1 sequence(s), 1 token(s) and 2 key range(s) a step with "
                             "the LM head: "));
  EXPECT_THAT(log, HasSubstr(", Q/K/V and attention in one stage"));
  EXPECT_THAT(log, Not(HasSubstr("persistent_qkv=fused does not apply")));
}

// persistent_records=registers: single tokens multiply with each lane's
// input records in registers and one transposed reduction per 32 sums.
// Tiny-q1's rows are at most 12 chunks (1,536 columns), one per lane either
// way, and both reductions pair the lanes in the same order (16, 8, 4, 2,
// 1 apart): the logits are the shared-memory rows' bit for bit, and the
// greedy tokens the reference's.
TEST(CudaPersistentDecode, RecordsInRegistersKeepTheReferenceTokensAndLogits) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const std::string held = std::string(kPersistent) + ";persistent_records=registers";
  EXPECT_THAT(log_of_greedy(held), HasSubstr("single tokens with the input records in registers"));
  // The logits of single tokens after the prompt, both ways.
  const auto next_logits = [](const std::string &options) {
    const bonsai::Engine engine = open_tiny_q1_cuda(options);
    bonsai::Session session = engine.create_session();
    session.eval(kTinyQ1Prompt);
    return session.eval(std::vector<int32_t>{kTinyQ1Greedy[0]}).logits;
  };
  const std::vector<float> shared = next_logits(kPersistent), registers = next_logits(held);
  ASSERT_EQ(shared.size(), registers.size());
  EXPECT_EQ(shared, registers);
}

// persistent_keys_per_range=N: a step's attention is cut into as many key
// ranges as give each N of its cached keys (a power of two, at most the
// grid-filling count). Tiny-q1 has 2 KV heads on the fake device's 4
// blocks: 2 ranges by default. The 8-token prompt finds no cached keys (1
// range with the option); the single tokens after it find 8 to 10: 8 keys a
// range leave them 1 range (no merge), 4 keys 2. The tokens stay the
// reference's.
TEST(CudaPersistentDecode, KeysPerRangeSetsEachStepsKeyRangesByItsContext) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  struct Case {
    std::string option;
    int prompt_ranges, single_ranges;
  };
  for (const Case &c : {Case{"", 2, 2}, Case{";persistent_keys_per_range=8", 1, 1},
                        Case{";persistent_keys_per_range=4", 1, 2}}) {
    SCOPED_TRACE(c.option);
    const std::string log = log_of_greedy(kPersistent + c.option, bonsai::LogLevel::debug);
    const auto plan = [](int tokens, int ranges) {
      return "a plan for 1 sequence(s), " + std::to_string(tokens) + " token(s) and " +
             std::to_string(ranges) + " key range(s) a step";
    };
    EXPECT_THAT(log, HasSubstr(plan(8, c.prompt_ranges)));
    EXPECT_THAT(log, HasSubstr(plan(1, c.single_ranges)));
    EXPECT_THAT(log, Not(HasSubstr(plan(1, 3 - c.single_ranges))));
  }
}

// persistent_quantize=producer (the default): the instructions that
// complete a group of a stage's output quantize it for the stage that reads
// it. The int8 codes are the same numbers as when every reader quantizes
// them (consumer); only the sums of squares are added in another order, so
// the logits stay next to the readers-quantize path, and the greedy tokens
// are the reference's.
TEST(CudaPersistentDecode, ProducerQuantizedInputsKeepTheReferenceTokensAndLogits) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const std::string readers_option = std::string(kPersistent) + ";persistent_quantize=consumer";
  EXPECT_THAT(log_of_greedy(kPersistent), HasSubstr("inputs quantized by their producers"));
  const std::vector<float> readers = prompt_logits(open_tiny_q1_cuda(readers_option));
  const std::vector<float> producers = prompt_logits(open_tiny_q1_cuda(kPersistent));
  ASSERT_EQ(producers.size(), readers.size());
  EXPECT_GT(cosine(producers, readers), 0.999999);
}

// persistent_matmul=mma (the default on 8.0+): steps of several tokens (the
// 8-token prompt here; single tokens stay on dp4a) multiply on the int8
// MMA. The same int8 products summed in another order: the reference's
// greedy tokens, and the prompt's logits next to the dp4a path's.
TEST(CudaPersistentDecode, MmaStepsKeepTheReferenceTokensAndLogits) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const std::string dp4a_option = std::string(kPersistent) + ";persistent_matmul=dp4a";
  EXPECT_THAT(log_of_greedy(kPersistent),
              HasSubstr("steps of several tokens multiplied with the int8 MMA"));
  {
    // dp4a, asked for, with the readers quantizing: the path before either
    // default, still the reference's tokens.
    const bonsai::Engine engine = open_tiny_q1_cuda(dp4a_option + ";persistent_quantize=consumer");
    bonsai::Session session = engine.create_session();
    EXPECT_EQ(tiny_q1_greedy(session), kTinyQ1Greedy);
  }
  const std::vector<float> dp4a = prompt_logits(open_tiny_q1_cuda(dp4a_option));
  const std::vector<float> tensor = prompt_logits(open_tiny_q1_cuda(kPersistent));
  ASSERT_EQ(tensor.size(), dp4a.size());
  EXPECT_GT(cosine(tensor, dp4a), 0.999999);
}

// A device before 8.0 has no int8 MMA: an info line says so and the steps
// multiply with dp4a, with the reference's tokens.
TEST(CudaPersistentDecode, MmaOnADeviceWithoutItSaysSoAndKeepsDp4a) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const EnvGuard turing("BONSAI_FAKE_CUDA_COMPUTE", std::string("7.5"));
  const std::string log = log_of_greedy(kPersistent);
  EXPECT_THAT(log, HasSubstr("persistent_matmul=mma does not apply (the int8 MMA needs compute "
                             "capability 8.0, this device has 7.x): multiplying with dp4a"));
  EXPECT_THAT(log, HasSubstr("steps of several tokens multiplied with dp4a"));
}

// Each fault breaks one rule of the kernel's protocol; the emulator must
// turn every one of them into numbers that fail the golden gate (cosine
// 0.9995 against the right ones), whatever order the blocks run in.
TEST(CudaPersistentDecode, AMissingWaitFenceOrCountFailsTheGoldenGate) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const std::vector<float> clean = prompt_logits(open_tiny_q1_cuda(kPersistent));
  for (const char *fault : {"no_wait", "no_fence", "early"})
    for (const char *seed : {"1", "2", "3"}) {
      SCOPED_TRACE(std::string(fault) + ", seed " + seed);
      const EnvGuard inject("BONSAI_FAKE_CUDA_PERSISTENT_FAULT", std::string(fault));
      const EnvGuard order("BONSAI_FAKE_CUDA_SEED", std::string(seed));
      const std::vector<float> broken = prompt_logits(open_tiny_q1_cuda(kPersistent));
      ASSERT_EQ(broken.size(), clean.size());
      const double agreement = cosine(broken, clean);
      std::printf("[ persistent ] fault %s, seed %s: cosine %.8f\n", fault, seed, agreement);
      EXPECT_LT(agreement, 0.9995);
    }
}

TEST(CudaPersistentDecode, ALostCounterUpdateIsReportedAndTheStepRunsAgainLaunchByLaunch) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const LevelGuard level;
  const EnvGuard inject("BONSAI_FAKE_CUDA_PERSISTENT_FAULT", std::string("lost_signal=3"));
  const bonsai::Engine engine = open_tiny_q1_cuda(kPersistent);
  bonsai::Session session = engine.create_session();
  const int persistent_before = fake_launches(kKernel);
  testing::internal::CaptureStderr();
  const std::vector<int32_t> greedy = tiny_q1_greedy(session);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(greedy, kTinyQ1Greedy);
  EXPECT_THAT(log, HasSubstr("persistent decode stalled: block "));
  EXPECT_THAT(log, HasSubstr("waited at instruction "));
  EXPECT_THAT(log, HasSubstr("layer 0 "));
  EXPECT_THAT(log, HasSubstr("run again launch by launch"));
  // Only the first step tried the persistent kernel.
  EXPECT_EQ(fake_launches(kKernel) - persistent_before, 1);
}

// Option persistent_trace: after each step the file holds the table of the
// launches so far and FILE.csv the last launch's marks, a line per
// instruction. The emulator's trace clock ticks once per read, so two marks
// of one instruction with nothing between them are 1 ns apart.
std::vector<std::string> lines_of(const std::filesystem::path &path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

TEST(CudaPersistentDecode, TheTraceOptionWritesWhereEachLaunchSpentItsTime) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const TempDir dir;
  const std::filesystem::path trace = dir.path() / "trace.txt";
  const bonsai::Engine engine =
      open_tiny_q1_cuda(std::string(kPersistent) + ";persistent_trace=" + trace.string());
  bonsai::Session session = engine.create_session();
  EXPECT_EQ(tiny_q1_greedy(session), kTinyQ1Greedy);
  const std::vector<std::string> report = lines_of(trace);
  ASSERT_FALSE(report.empty());
  // The 8-token prompt, then three single tokens.
  EXPECT_THAT(report[0], HasSubstr("persistent decode trace: 4 launches of 1 to 8 tokens"));
  for (const char *stage :
       {"Q/K/V ", "attention ", "output projection ", "gate/up ", "down projection ", "a layer "})
    EXPECT_TRUE(std::any_of(report.begin(), report.end(), [&](const std::string &l) {
      return l.rfind(stage, 0) == 0;
    })) << stage;
  EXPECT_EQ(report.back(), "timer: the finest nonzero step between two marks was 1 ns");
  const std::vector<std::string> csv = lines_of(trace.string() + ".csv");
  ASSERT_GT(csv.size(), 5u);
  EXPECT_THAT(csv[0], HasSubstr("instruction,block,layer,stage,"));
  for (size_t i = 1; i < csv.size(); ++i) {
    EXPECT_EQ(std::count(csv[i].begin(), csv[i].end(), ','), 11) << csv[i];
    EXPECT_EQ(csv[i].rfind(std::to_string(i - 1) + ",", 0), 0u) << csv[i];
  }
}

TEST(CudaPersistentDecode, ATraceFileThatCannotBeWrittenWarnsOnceAndDecodingGoesOn) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const LevelGuard level;
  const TempDir dir;
  const std::string trace = (dir.path() / "no-such-folder" / "trace.txt").string();
  const bonsai::Engine engine =
      open_tiny_q1_cuda(std::string(kPersistent) + ";persistent_trace=" + trace);
  bonsai::Session session = engine.create_session();
  testing::internal::CaptureStderr();
  EXPECT_EQ(tiny_q1_greedy(session), kTinyQ1Greedy);
  const std::string log = testing::internal::GetCapturedStderr();
  const std::string warning = "persistent_trace: cannot write " + trace;
  EXPECT_THAT(log, HasSubstr(warning));
  EXPECT_EQ(log.find(warning), log.rfind(warning)); // once, not per step
}

} // namespace
