// Plugin discovery and loading: every broken plugin gives a clear error that
// names its file; lists of candidates fall back to the next usable one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include <unistd.h>

#include "bonsai/engine.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;
using ::testing::HasSubstr;

// Engine::open with `backend`; returns the PluginError message ("" if none).
std::string open_error(const std::string &backend) {
  bonsai::EngineOptions options;
  options.backend = backend;
  options.n_ctx = 64;
  try {
    bonsai::Engine::open(tiny_q1(), options);
  } catch (const bonsai::PluginError &error) {
    return error.what();
  }
  return "";
}

TEST(PluginLoading, TextFileNamedSoIsNotASharedLibrary) {
  const std::string file = fake_plugin("text");
  const std::string message = open_error(file);
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr("not a shared library"));
}

TEST(PluginLoading, MissingEntrySymbolIsNamed) {
  const std::string file = fake_plugin("noentry");
  const std::string message = open_error(file);
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr("bonsai_backend_get_api"));
}

TEST(PluginLoading, EntryReturningNullIsReported) {
  const std::string file = fake_plugin("nullentry");
  const std::string message = open_error(file);
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr("returned NULL"));
}

TEST(PluginLoading, AbiMajorMismatchNamesBothVersions) {
  const std::string file = fake_plugin("abitwo");
  const std::string message = open_error(file);
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr("built for ABI 2.x"));
  EXPECT_THAT(message, HasSubstr("this host speaks 1.x"));
}

TEST(PluginLoading, ProbeNoDeviceIsAnErrorWhenChosenExplicitly) {
  const std::string file = fake_plugin("nodevice");
  const std::string message = open_error(file);
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr("no device"));
  EXPECT_THAT(message, HasSubstr("fake: no accelerator in this test"));
}

TEST(PluginLoading, MissingRequiredFunctionIsNamed) {
  const std::string file = fake_plugin("nomatmul");
  const std::string message = open_error(file);
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr("'matmul'"));
}

TEST(PluginLoading, MissingFileIsNamed) {
  const std::string file = fake_dir() + "/libbonsai_absent.so";
  const std::string message = open_error(file);
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr("no such file"));
}

TEST(PluginLoading, CreateContextFailureCarriesThePluginsReason) {
  bonsai::EngineOptions options;
  options.backend = fake_plugin("noctx");
  options.n_ctx = 64;
  // Loading and probing succeed; the failure comes with the first context.
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  try {
    (void)engine.create_session();
    FAIL() << "create_session should have thrown";
  } catch (const bonsai::PluginError &error) {
    EXPECT_THAT(std::string(error.what()), HasSubstr(fake_plugin("noctx")));
    EXPECT_THAT(std::string(error.what()), HasSubstr("create_context"));
    EXPECT_THAT(std::string(error.what()), HasSubstr("fake: device memory exhausted"));
  }
}

TEST(PluginLoading, UnknownNameListsTheSearchedFolders) {
  ScopedEnv env("BONSAI_PLUGIN_PATH", fake_dir());
  const std::string message = open_error("doesnotexist");
  EXPECT_THAT(message, HasSubstr("libbonsai_doesnotexist.so"));
  EXPECT_THAT(message, HasSubstr(fake_dir()));
}

TEST(PluginLoading, NameIsResolvedThroughPluginPathFirst) {
  ScopedEnv env("BONSAI_PLUGIN_PATH", "/nonexistent-dir:" + fake_dir());
  bonsai::EngineOptions options;
  options.backend = "fake";
  options.n_ctx = 64;
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  EXPECT_EQ(engine.backend().path, fake_plugin("fake"));
  EXPECT_EQ(engine.backend().name, "fake");
  EXPECT_EQ(engine.backend().version, "9.9.9");
}

TEST(PluginLoading, CandidateListSkipsUnusablePluginsInOrder) {
  ScopedEnv env("BONSAI_PLUGIN_PATH", fake_dir());
  bonsai::EngineOptions options;
  options.backend = "text,noentry,nullentry,abitwo,nodevice,absent,fake,nomatmul";
  options.n_ctx = 64;
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  EXPECT_EQ(engine.backend().path, fake_plugin("fake"));
}

TEST(PluginLoading, CandidateListOfPathsFallsBackToo) {
  bonsai::EngineOptions options;
  options.backend = fake_plugin("nodevice") + "," + fake_plugin("fake");
  options.n_ctx = 64;
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  EXPECT_EQ(engine.backend().path, fake_plugin("fake"));
}

TEST(PluginLoading, CandidateListWithNothingUsableGivesEveryReason) {
  ScopedEnv env("BONSAI_PLUGIN_PATH", fake_dir());
  const std::string message = open_error("nodevice,abitwo");
  EXPECT_THAT(message, HasSubstr("no usable backend"));
  EXPECT_THAT(message, HasSubstr(fake_plugin("nodevice")));
  EXPECT_THAT(message, HasSubstr("no device"));
  EXPECT_THAT(message, HasSubstr(fake_plugin("abitwo")));
  EXPECT_THAT(message, HasSubstr("ABI 2.x"));
}

TEST(PluginLoading, SearchPathIsTheEnvironmentThenTheFolderNextToTheHostLibrary) {
  ScopedEnv env("BONSAI_PLUGIN_PATH", "/first/dir::/second/dir");
  const auto dirs = bonsai::plugin_search_path();
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], "/first/dir");
  EXPECT_EQ(dirs[1], "/second/dir");
  // lib/bonsai/plugins beside libbonsai_host.so, which in this tree is the
  // build's plugin folder; no folder is baked in at build time, so an
  // installed host never searches the tree it was built in.
  EXPECT_EQ(std::filesystem::weakly_canonical(dirs[2]),
            std::filesystem::weakly_canonical(BONSAI_PLUGIN_DIR));
}

TEST(PluginLoading, AutoTakesTheUsablePluginWithTheHighestPreference) {
  // Candidates: every fake (broken ones skipped, working ones state no
  // preference), "preferred" (300), then the build folder's cpu (100) and
  // cuda (no device here, or 200 on a GPU).
  ScopedEnv env("BONSAI_PLUGIN_PATH", fake_dir());
  bonsai::EngineOptions options;
  options.n_ctx = 64;
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  EXPECT_EQ(engine.backend().path, fake_plugin("preferred"));
  EXPECT_EQ(engine.backend().device.preference, 300u);
}

TEST(PluginLoading, AutoPutsAPluginRunningQwen35LayersFirstForAQwen35File) {
  // "preferred" (300) only multiplies matrices; the CPU plugin (100) runs
  // qwen35 layers itself (ABI 1.2 layer kinds), so it goes first for such a
  // file and "preferred" stays behind it as a fallback. A list keeps its order.
  ScopedEnv env("BONSAI_PLUGIN_PATH", fake_dir());
  bonsai::EngineOptions options;
  options.n_ctx = 64;
  const std::string qwen35 = data_path("tiny-q35-q1.gguf");
  const bonsai::Engine engine = bonsai::Engine::open(qwen35, options);
  EXPECT_EQ(engine.backend().name, "cpu");
  EXPECT_TRUE(engine.create_session().plugin_runs_layers());
  EXPECT_EQ(bonsai::Engine::open(tiny_q1(), options).backend().path, fake_plugin("preferred"));
  options.backend = "preferred,cpu";
  EXPECT_EQ(bonsai::Engine::open(qwen35, options).backend().path, fake_plugin("preferred"));
}

TEST(PluginLoading, AutoRanksAPluginStatingNoPreferenceBelowTheCpuPlugin) {
  // A working plugin first in the search path that states no preference (as
  // every 1.0 plugin) loses to the CPU plugin's 100: the order of folders
  // does not decide, the preference does.
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / ("auto-rank-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(fake_plugin("fake"), dir / "libbonsai_fake.so",
                             std::filesystem::copy_options::overwrite_existing);
  ScopedEnv env("BONSAI_PLUGIN_PATH", dir.string());
  bonsai::EngineOptions options;
  options.n_ctx = 64;
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  EXPECT_THAT(engine.backend().name, ::testing::AnyOf("cpu", "cuda"));
  EXPECT_GE(engine.backend().device.preference, 100u);
  std::filesystem::remove_all(dir);
}

TEST(PluginLoading, AutoInAListIsTriedInItsPlace) {
  ScopedEnv env("BONSAI_PLUGIN_PATH", fake_dir());
  bonsai::EngineOptions options;
  options.backend = "nodevice,auto,fake";
  options.n_ctx = 64;
  EXPECT_EQ(bonsai::Engine::open(tiny_q1(), options).backend().path, fake_plugin("preferred"));
}

TEST(PluginLoading, ListPluginsReportsEveryFileInTheFolder) {
  const auto plugins = bonsai::list_plugins({fake_dir()});
  std::map<std::string, bonsai::PluginInfo> by_file;
  for (const auto &plugin : plugins)
    by_file[plugin.path.filename().string()] = plugin;
  const std::vector<std::string> expected = {
      "libbonsai_abitwo.so",   "libbonsai_fake.so",      "libbonsai_matmulfails.so",
      "libbonsai_noctx.so",    "libbonsai_nodevice.so",  "libbonsai_noentry.so",
      "libbonsai_nomatmul.so", "libbonsai_nullentry.so", "libbonsai_preferred.so",
      "libbonsai_scripted.so", "libbonsai_short.so",     "libbonsai_text.so",
      "libbonsai_uploadoom.so"};
  std::vector<std::string> files;
  for (const auto &[file, info] : by_file)
    files.push_back(file);
  EXPECT_EQ(files, expected);

  const auto &fake = by_file["libbonsai_fake.so"];
  EXPECT_TRUE(fake.loaded);
  EXPECT_EQ(fake.name, "fake");
  EXPECT_EQ(fake.version, "9.9.9");
  EXPECT_EQ(fake.description, "fake plugin for host tests");
  EXPECT_EQ(fake.abi_major, 1u);
  EXPECT_EQ(fake.abi_minor, 3u); // built against this header (ABI 1.3)
  EXPECT_TRUE(fake.device_ok);
  EXPECT_EQ(fake.probe_status, "ok");
  EXPECT_EQ(fake.device.name, "fake scalar device");
  EXPECT_EQ(fake.device.device_count, 1u);
  EXPECT_EQ(fake.device.preference, 0u); // states none, as a 1.0 plugin
  EXPECT_EQ(by_file["libbonsai_preferred.so"].device.preference, 300u);

  const auto &nodevice = by_file["libbonsai_nodevice.so"];
  EXPECT_TRUE(nodevice.loaded);
  EXPECT_FALSE(nodevice.device_ok);
  EXPECT_EQ(nodevice.probe_status, "no device");
  EXPECT_EQ(nodevice.device.detail, "fake: no accelerator in this test");

  // A context failure only shows when a context is made: listing is fine.
  EXPECT_TRUE(by_file["libbonsai_noctx.so"].device_ok);
  EXPECT_TRUE(by_file["libbonsai_short.so"].device_ok);

  for (const char *broken :
       {"libbonsai_abitwo.so", "libbonsai_noentry.so", "libbonsai_nullentry.so",
        "libbonsai_text.so", "libbonsai_nomatmul.so"}) {
    const auto &info = by_file[broken];
    EXPECT_FALSE(info.loaded) << broken;
    EXPECT_FALSE(info.device_ok) << broken;
    EXPECT_THAT(info.load_error, HasSubstr(info.path.string())) << broken;
  }
  EXPECT_EQ(by_file["libbonsai_text.so"].name, "text"); // from the file name
  EXPECT_THAT(by_file["libbonsai_abitwo.so"].load_error, HasSubstr("ABI 2.x"));
}

TEST(PluginLoading, ListPluginsSkipsMissingFolders) {
  EXPECT_TRUE(bonsai::list_plugins({"/nonexistent/bonsai/plugins"}).empty());
}

TEST(PluginLoading, InspectNeverThrowsForABrokenPlugin) {
  const auto info = bonsai::inspect_plugin(fake_plugin("nullentry"));
  EXPECT_FALSE(info.loaded);
  EXPECT_THAT(info.load_error, HasSubstr("returned NULL"));
  EXPECT_EQ(info.name, "nullentry");
}

} // namespace
