// Host logging (levels, plugin messages prefixed with the plugin name) and
// the terminal progress bar.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/engine.hpp"
#include "bonsai/progress.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;
using ::testing::HasSubstr;
using ::testing::Not;

// Restores the process-wide level after a test.
class LevelGuard {
public:
  LevelGuard() : saved_(bonsai::log_level()) {}
  ~LevelGuard() { bonsai::set_log_level(saved_); }

private:
  bonsai::LogLevel saved_;
};

TEST(Logging, ParsesLevelNames) {
  EXPECT_EQ(bonsai::parse_log_level("trace"), bonsai::LogLevel::trace);
  EXPECT_EQ(bonsai::parse_log_level("DEBUG"), bonsai::LogLevel::debug);
  EXPECT_EQ(bonsai::parse_log_level("info"), bonsai::LogLevel::info);
  EXPECT_EQ(bonsai::parse_log_level("warning"), bonsai::LogLevel::warn);
  EXPECT_EQ(bonsai::parse_log_level("error"), bonsai::LogLevel::error);
  EXPECT_EQ(bonsai::parse_log_level("off"), bonsai::LogLevel::off);
  EXPECT_EQ(bonsai::parse_log_level("loud"), std::nullopt);
  EXPECT_EQ(bonsai::parse_log_level(""), std::nullopt);
}

TEST(Logging, PluginMessagesArePrefixedWithThePluginName) {
  LevelGuard guard;
  bonsai::set_log_level(bonsai::LogLevel::info);
  bonsai::EngineOptions options;
  options.backend = fake_plugin("fake");
  options.n_ctx = 16;
  const auto engine = bonsai::Engine::open(tiny_q1(), options);
  testing::internal::CaptureStderr();
  { auto session = engine.create_session(); }
  const std::string output = testing::internal::GetCapturedStderr();
  // The fake plugin logs this line at info level from create_context.
  EXPECT_THAT(output, HasSubstr("[fake] fake context created"));
}

TEST(Logging, LevelFiltersHostAndPluginMessages) {
  LevelGuard guard;
  bonsai::set_log_level(bonsai::LogLevel::warn);
  EXPECT_EQ(bonsai::log_level(), bonsai::LogLevel::warn);
  bonsai::EngineOptions options;
  options.backend = fake_plugin("fake");
  options.n_ctx = 16;
  const auto engine = bonsai::Engine::open(tiny_q1(), options);
  testing::internal::CaptureStderr();
  { auto session = engine.create_session(); }
  bonsai::log_message(bonsai::LogLevel::info, "hidden info line");
  bonsai::log_message(bonsai::LogLevel::error, "shown error line");
  const std::string output = testing::internal::GetCapturedStderr();
  EXPECT_THAT(output, Not(HasSubstr("fake context created")));
  EXPECT_THAT(output, Not(HasSubstr("hidden info line")));
  EXPECT_THAT(output, HasSubstr("shown error line"));
}

TEST(Logging, SkippedCandidatesAreLoggedWithTheReason) {
  LevelGuard guard;
  bonsai::set_log_level(bonsai::LogLevel::info);
  bonsai::EngineOptions options;
  options.backend = fake_plugin("nodevice") + "," + fake_plugin("fake");
  options.n_ctx = 16;
  testing::internal::CaptureStderr();
  (void)bonsai::Engine::open(tiny_q1(), options);
  const std::string output = testing::internal::GetCapturedStderr();
  EXPECT_THAT(output, HasSubstr("skipping"));
  EXPECT_THAT(output, HasSubstr(fake_plugin("nodevice")));
  EXPECT_THAT(output, HasSubstr("fake: no accelerator in this test"));
}

TEST(ProgressBar, DrawsPercentagesAndEndsTheLine) {
  testing::internal::CaptureStderr();
  {
    bonsai::ProgressBar bar("upload", true);
    bar.update(0.0);
    bar.update(0.5);
    bar.update(0.5); // same percentage: not redrawn
    bar.finish();
    bar.update(0.7); // after finish: ignored
  }
  const std::string output = testing::internal::GetCapturedStderr();
  EXPECT_THAT(output, HasSubstr("upload ["));
  EXPECT_THAT(output, HasSubstr("  0%"));
  EXPECT_THAT(output, HasSubstr(" 50%"));
  EXPECT_THAT(output, HasSubstr("100%"));
  EXPECT_THAT(output, Not(HasSubstr(" 70%")));
  EXPECT_EQ(std::count(output.begin(), output.end(), '%'), 3);
  EXPECT_EQ(output.back(), '\n');
}

TEST(ProgressBar, DisabledBarPrintsNothing) {
  testing::internal::CaptureStderr();
  {
    bonsai::ProgressBar bar("upload", false);
    bar.update(0.5);
    bar.finish();
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

} // namespace
