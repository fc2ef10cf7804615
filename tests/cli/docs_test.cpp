// docs/cli.md stays true to the program: every flag that a command's --help
// lists is described there.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

std::string cli_doc() {
  const auto path =
      std::filesystem::path(BONSAI_TEST_DATA_DIR).parent_path().parent_path() / "docs" / "cli.md";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "--flag" as the doc writes it: in code (`--flag`) or in a list of
// spellings inside code (`-r`, `--reverse-prompt`; `-p, --n-prompt N`).
bool documented(const std::string &doc, const std::string &flag) {
  const std::regex mention("(`|, |/ `?)" + flag + "([ `,|=]|$)");
  return std::regex_search(doc, mention);
}

TEST(CliDocs, EveryFlagInHelpIsInDocsCliMd) {
  const std::string doc = cli_doc();
  ASSERT_FALSE(doc.empty()) << "docs/cli.md not found";
  EXPECT_FALSE(documented(doc, "--no-such-flag")); // the check can fail
  for (const char *command : {"run", "chat", "eval", "info", "backends", "bench"}) {
    const auto r = run_bonsai({command, "--help"});
    ASSERT_EQ(r.exit_code, 0) << command;
    std::set<std::string> flags;
    const std::regex flag(R"((^|\s|\[ )(--[a-z][a-z0-9-]*))");
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), flag);
         it != std::sregex_iterator(); ++it)
      flags.insert((*it)[2]);
    EXPECT_GT(flags.size(), 1u) << command;
    for (const std::string &f : flags)
      EXPECT_TRUE(documented(doc, f))
          << "bonsai " << command << " " << f << " is not described in docs/cli.md";
  }
}

} // namespace
} // namespace bonsai::test
