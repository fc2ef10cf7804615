// docs/cli.md stays true to the program: every flag that a command's --help
// lists is described there.
#include <cctype>
#include <fstream>
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

bool ends_with(const std::string &text, size_t end, const std::string &suffix) {
  return end >= suffix.size() && text.compare(end - suffix.size(), suffix.size(), suffix) == 0;
}

// "--flag" as the doc writes it: in code (`--flag`) or in a list of
// spellings inside code (`-r`, `--reverse-prompt`; `-p, --n-prompt N`).
bool documented(const std::string &doc, const std::string &flag) {
  for (size_t at = doc.find(flag); at != std::string::npos; at = doc.find(flag, at + 1)) {
    const size_t end = at + flag.size();
    const bool starts = ends_with(doc, at, "`") || ends_with(doc, at, ", ") ||
                        ends_with(doc, at, "/ ") || ends_with(doc, at, "/ `");
    const bool ends = end == doc.size() || std::string(" `,|=").find(doc[end]) != std::string::npos;
    if (starts && ends)
      return true;
  }
  return false;
}

// The long flags of a --help text: "--name" at the start of a word or after
// boost's "[ " (as in "-m [ --model ]").
std::set<std::string> help_flags(const std::string &help) {
  std::set<std::string> flags;
  for (size_t at = help.find("--"); at != std::string::npos; at = help.find("--", at + 2)) {
    const bool word_start = at == 0 || help[at - 1] == ' ' || help[at - 1] == '\n';
    size_t end = at + 2;
    while (end < help.size() &&
           (std::islower(static_cast<unsigned char>(help[end])) ||
            std::isdigit(static_cast<unsigned char>(help[end])) || help[end] == '-'))
      ++end;
    if (word_start && end > at + 2 && std::islower(static_cast<unsigned char>(help[at + 2])))
      flags.insert(help.substr(at, end - at));
  }
  return flags;
}

TEST(CliDocs, EveryFlagInHelpIsInDocsCliMd) {
  const std::string doc = cli_doc();
  ASSERT_FALSE(doc.empty()) << "docs/cli.md not found";
  EXPECT_FALSE(documented(doc, "--no-such-flag")); // the check can fail
  for (const char *command : {"run", "chat", "eval", "info", "backends", "bench"}) {
    const auto r = run_bonsai({command, "--help"});
    ASSERT_EQ(r.exit_code, 0) << command;
    const std::set<std::string> flags = help_flags(r.out);
    EXPECT_GT(flags.size(), 1u) << command;
    for (const std::string &f : flags)
      EXPECT_TRUE(documented(doc, f))
          << "bonsai " << command << " " << f << " is not described in docs/cli.md";
  }
}

} // namespace
} // namespace bonsai::test
