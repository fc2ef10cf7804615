// bonsai.pc (cmake/bonsai.pc.in, configured into the build tree as it is
// installed): C builds take its Cflags as they are, C++ builds add the
// `cxxflags` variable for the C++20 the headers need.
#include <cstdlib>
#include <sstream>

#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

// pkg-config's full path from $PATH (run_process takes no search), or "".
std::string find_pkg_config() {
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && std::filesystem::exists(std::filesystem::path(dir) / "pkg-config"))
      return (std::filesystem::path(dir) / "pkg-config").string();
  return "";
}

TEST(PkgConfig, CxxFlagsCarryCxx20AndCflagsStayValidForC) {
  const auto pc_dir = std::filesystem::path(BONSAI_BIN_DIR).parent_path() / "cmake";
  if (!std::filesystem::exists(pc_dir / "bonsai.pc"))
    GTEST_SKIP() << "skipped: no configured bonsai.pc in " << pc_dir;
  const std::string pkg_config = find_pkg_config();
  if (pkg_config.empty())
    GTEST_SKIP() << "skipped: pkg-config is not installed";
  setenv("PKG_CONFIG_PATH", pc_dir.c_str(), 1);
  const auto cxx =
      run_process({{pkg_config, "--variable=cxxflags", "bonsai"}, "", milliseconds(30000)});
  const auto cflags = run_process({{pkg_config, "--cflags", "bonsai"}, "", milliseconds(30000)});
  unsetenv("PKG_CONFIG_PATH");
  ASSERT_EQ(cxx.exit_code, 0) << cxx.err;
  EXPECT_EQ(cxx.out, "-std=c++20\n");
  ASSERT_EQ(cflags.exit_code, 0) << cflags.err;
  EXPECT_NE(cflags.out.find("-I"), std::string::npos) << cflags.out;
  // clang refuses -std=c++20 on a C file, and the C API is built with these.
  EXPECT_EQ(cflags.out.find("-std="), std::string::npos) << cflags.out;
}

} // namespace
} // namespace bonsai::test
