// The decode tuner on the fake driver (plugins/cuda/src/tuner.hpp): the
// fake's clock is scripted (BONSAI_FAKE_CUDA_TIMES, fake_clock.hpp), so a
// test says how long each candidate's kernels take and checks that the
// choice follows; its broken-synchronization faults can be put on one
// variant of the persistent kernel (KIND@FLAG), which must then fail its
// check and never be chosen. The choices go to a folder of each test's
// own ($BONSAI_CUDA_TUNE_DIR), so the cache is seen used, found stale and
// repaired. Tiny-q1's steps of one token after a one-token prompt are tuned
// (one width) unless a test says otherwise; the check runs every candidate
// once, a budget of 1 ms leaves no timed run after it (the scripted time
// of the check run is exact), so a tuning is five emulated steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
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

namespace fs = std::filesystem;

// Tiny-q1's steps: a persistent launch 80 us with the LM head in it, 60
// without (whose head then takes four launches of 3 us after it), 50 with
// the next weights prefetched (the head in it); every other kernel 3 us:
// the graph path's single token is 49 launches, 147 us. Prefetching wins.
constexpr const char *kPrefetchFastest =
    "persistent+prefetch=50;persistent+head=80;persistent=60;=3";
constexpr const char *kPrefetchChoice = "decode=persistent;persistent_prefetch=next";
constexpr const char *kOptions = "tune_budget_ms=1";
// A context that may tune times an empty pair of events once, to see that
// the driver can time the stream at all.
constexpr int kClockProbe = 1;

std::string read_file(const fs::path &path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The tuner's files in `dir` by the width each is for.
std::map<int, fs::path> tune_files(const fs::path &dir) {
  std::map<int, fs::path> files;
  std::error_code ignored;
  for (const auto &entry : fs::directory_iterator(dir, ignored)) {
    const std::string text = read_file(entry.path());
    const size_t at = text.find("\nwidth ");
    if (entry.path().extension() == ".tune" && at != std::string::npos)
      files[std::stoi(text.substr(at + 7))] = entry.path();
  }
  return files;
}

// The value of the line "`name` ..." of a tuner's file.
std::string file_line(const fs::path &file, const std::string &name) {
  std::istringstream lines(read_file(file));
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name + " ", 0) == 0)
      return line.substr(name.size() + 1);
  return {};
}

void replace_line(const fs::path &file, const std::string &name, const std::string &value) {
  std::istringstream lines(read_file(file));
  std::string text;
  for (std::string line; std::getline(lines, line);)
    text += (line.rfind(name + " ", 0) == 0 ? name + " " + value : line) + "\n";
  std::ofstream(file, std::ios::trunc) << text;
}

// What one engine's run left: the plugin's log, whether it timed anything,
// its greedy tokens.
struct EngineRun {
  std::string log;
  int timings = 0;
  std::vector<int32_t> tokens;
};

// Opens `model` on the fake driver with `options` and decodes greedily:
// three single tokens after the one-token prompt {223}, or after tiny-q1's
// 8-token prompt with `full_prompt` (tiny_q1_greedy).
EngineRun run(const std::string &options, bool full_prompt = false,
              const std::string &model = tiny_q1()) {
  const bonsai::LogLevel saved = bonsai::log_level();
  bonsai::set_log_level(bonsai::LogLevel::info);
  testing::internal::CaptureStderr();
  const int timings_before = live_counts().timings;
  EngineRun r;
  {
    bonsai::EngineOptions engine_options;
    engine_options.backend = "cuda";
    engine_options.n_ctx = 64;
    engine_options.n_batch = 16;
    engine_options.plugin_options = options;
    const bonsai::Engine engine = bonsai::Engine::open(model, engine_options);
    bonsai::Session session = engine.create_session();
    if (full_prompt) {
      r.tokens = tiny_q1_greedy(session);
    } else {
      r.tokens.push_back(session.eval_argmax(std::vector<int32_t>{223}));
      while (r.tokens.size() < 3)
        r.tokens.push_back(session.eval_argmax(std::vector<int32_t>{r.tokens.back()}));
    }
  }
  r.timings = live_counts().timings - timings_before;
  r.log = testing::internal::GetCapturedStderr();
  bonsai::set_log_level(saved);
  return r;
}

// The scripted clock, the fake driver and a tuner folder of the test's own.
struct Tuning {
  explicit Tuning(const char *times)
      : driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver)),
        clock("BONSAI_FAKE_CUDA_TIMES", times),
        folder("BONSAI_CUDA_TUNE_DIR", dir.path().string()) {}
  TempDir dir;
  EnvGuard driver, clock, folder;
};

TEST(CudaTune, TheChoiceFollowsTheMeasuredTimes) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const Tuning tuning(kPrefetchFastest);
  // Both widths tiny-q1's greedy run meets: its 8-token prompt and single
  // tokens. Prefetching is fastest at both, and its tokens are the reference's.
  const EngineRun r = run(kOptions, true);
  EXPECT_EQ(r.tokens, kTinyQ1Greedy);
  EXPECT_GT(r.timings, kClockProbe);
  EXPECT_THAT(r.log, HasSubstr(std::string("decode tune: * ") + kPrefetchChoice));
  EXPECT_THAT(r.log, HasSubstr("decode tune:   decode=graph"));
  std::map<int, fs::path> files = tune_files(tuning.dir.path());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(file_line(files.at(8), "choice"), kPrefetchChoice);
  EXPECT_EQ(file_line(files.at(1), "choice"), kPrefetchChoice);

  // A slow persistent kernel, tuned afresh (tune=fresh, whatever the cache
  // says): the graph path wins, and the single tokens after the tuned one
  // take it: the only persistent launches are the six persistent
  // candidates' checks (as is, head after the launch, prefetching, balanced
  // shares, weights streamed ahead, Q/K/V fused with attention).
  const EnvGuard slow("BONSAI_FAKE_CUDA_TIMES", std::string("persistent=500;=3"));
  const int before = fake_launches("bonsai_decode_persistent");
  const EngineRun fresh = run(std::string(kOptions) + ";tune=fresh");
  EXPECT_THAT(fresh.log, HasSubstr("decode tune: * decode=graph"));
  EXPECT_THAT(fresh.log, Not(HasSubstr("cached in")));
  EXPECT_EQ(fake_launches("bonsai_decode_persistent") - before, 6);
  files = tune_files(tuning.dir.path());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(file_line(files.at(1), "choice"), "decode=graph");
  EXPECT_EQ(file_line(files.at(8), "choice"), kPrefetchChoice);
}

// A second context finds the choice (no timing); one measured by another
// driver or plugin build, or a damaged file, is tuned again and rewritten;
// another model has a file of its own; tune=off neither reads nor times.
TEST(CudaTune, TheCacheIsUsedUntilTheDriverThePluginBuildOrTheModelChanges) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const Tuning tuning(kPrefetchFastest);
  const EngineRun first = run(kOptions);
  EXPECT_GT(first.timings, kClockProbe);
  const std::map<int, fs::path> files = tune_files(tuning.dir.path());
  ASSERT_EQ(files.size(), 1u);
  const fs::path file = files.at(1);
  const std::string driver = file_line(file, "driver"), build = file_line(file, "build");
  EXPECT_THAT(build, ::testing::StartsWith("gnu-")); // the plugin binary's build ID
  EXPECT_EQ(first.tokens.size(), 3u);

  // The same device, model, options and width: the cached choice, nothing
  // timed but the context's look at the clock, no candidate run: the three
  // steps are three launches of the chosen persistent kernel.
  const int persistent_before = fake_launches("bonsai_decode_persistent");
  const EngineRun cached = run(kOptions);
  EXPECT_EQ(cached.timings, kClockProbe);
  EXPECT_EQ(fake_launches("bonsai_decode_persistent") - persistent_before, 3);
  EXPECT_THAT(cached.log, HasSubstr("cached in " + file.string()));
  EXPECT_EQ(cached.tokens, first.tokens);

  // Measured by another driver: tuned again, and the file says this one.
  replace_line(file, "driver", "12080");
  const EngineRun new_driver = run(kOptions);
  EXPECT_GT(new_driver.timings, kClockProbe);
  EXPECT_THAT(new_driver.log, HasSubstr("driver 12080 measured it, this is " + driver));
  EXPECT_EQ(file_line(file, "driver"), driver);

  // By another build of the plugin: the same.
  replace_line(file, "build", "gnu-0000");
  const EngineRun new_build = run(kOptions);
  EXPECT_GT(new_build.timings, kClockProbe);
  EXPECT_THAT(new_build.log, HasSubstr("plugin build gnu-0000 measured it, this is " + build));
  EXPECT_EQ(file_line(file, "build"), build);

  // Cut in half: ignored with a warning, tuned again, written whole (the
  // scripted clock measures the same again), then found by the next context.
  const std::string whole = read_file(file);
  std::ofstream(file, std::ios::trunc) << whole.substr(0, whole.size() / 2);
  const EngineRun repaired = run(kOptions);
  EXPECT_GT(repaired.timings, kClockProbe);
  EXPECT_THAT(repaired.log,
              HasSubstr("decode tune: ignoring " + file.string() + ", which is damaged ("));
  EXPECT_EQ(read_file(file), whole);
  EXPECT_EQ(run(kOptions).timings, kClockProbe);

  // tune=off neither reads nor times.
  const EngineRun off = run("tune=off");
  EXPECT_EQ(off.timings, 0);
  EXPECT_THAT(off.log, Not(HasSubstr("decode tune")));

  // Another model (tiny-q2: Q2_0 weights): a file of its own.
  const EngineRun other = run(kOptions, false, std::string(BONSAI_TEST_DATA_DIR) + "/tiny-q2.gguf");
  EXPECT_GT(other.timings, kClockProbe);
  EXPECT_EQ(std::distance(fs::directory_iterator(tuning.dir.path()), {}), 2);
  EXPECT_THAT(read_file(file), HasSubstr(", q1_0, head q1_0, kv f32\n"));
}

TEST(CudaTune, ACandidateThatFailsItsCheckIsNeverChosen) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  // The fastest candidate's launches lose their waits (numbers from inputs
  // not yet written), or a counter update (the launch stalls): it fails,
  // and the next fastest, the LM head after the launch (60 + 4 x 3 + the
  // embedding's 3 = 75 us, against 83 with the head in it), is taken.
  for (const char *fault : {"no_wait@prefetch", "lost_signal=1@prefetch"}) {
    SCOPED_TRACE(fault);
    const Tuning tuning(kPrefetchFastest);
    const EnvGuard broken("BONSAI_FAKE_CUDA_PERSISTENT_FAULT", std::string(fault));
    const EngineRun r = run(std::string(kOptions) + ";persistent_deadline_ms=50");
    EXPECT_THAT(r.log, HasSubstr(std::string("decode tune:   ") + kPrefetchChoice));
    EXPECT_THAT(r.log, HasSubstr(std::string(fault).rfind("no_wait", 0) == 0
                                     ? "failed: token 0: cosine"
                                     : "failed: its launch stalled"));
    EXPECT_THAT(r.log, HasSubstr("decode tune: * decode=persistent;persistent_head=off"));
    const std::map<int, fs::path> files = tune_files(tuning.dir.path());
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(file_line(files.at(1), "choice"), "decode=persistent;persistent_head=off");
  }
}

TEST(CudaTune, WithoutAClockTheFixedChoiceStays) {
  REQUIRE_FAKE_DRIVER_AND_NVRTC();
  const TempDir dir;
  const EnvGuard driver("BONSAI_CUDA_DRIVER", std::string(kFakeDriver));
  const EnvGuard no_clock("BONSAI_FAKE_CUDA_TIMES", std::nullopt);
  const EnvGuard folder("BONSAI_CUDA_TUNE_DIR", dir.path().string());
  const int persistent_before = fake_launches("bonsai_decode_persistent");
  const EngineRun r = run(kOptions);
  EXPECT_EQ(r.timings, 0);
  EXPECT_THAT(r.log, HasSubstr("the decode paths cannot be timed ("));
  EXPECT_THAT(r.log, Not(HasSubstr("decode tune")));
  EXPECT_TRUE(tune_files(dir.path()).empty());
  // sm_90: the fixed choice runs the three single tokens persistent.
  EXPECT_EQ(fake_launches("bonsai_decode_persistent") - persistent_before, 3);
}

} // namespace
