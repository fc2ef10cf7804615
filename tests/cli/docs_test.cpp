// docs/cli.md stays true to the program: every flag that a command's --help
// lists is described there.
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

// docs/NAME as text ("" when missing).
std::string doc(const std::string &name) {
  const auto path =
      std::filesystem::path(BONSAI_TEST_DATA_DIR).parent_path().parent_path() / "docs" / name;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string cli_doc() {
  return doc("cli.md");
}

// Runs of spaces as one: a synopsis aligned in the doc reads as --help's.
std::string squeeze_spaces(const std::string &text) {
  std::string out;
  for (const char c : text)
    if (c != ' ' || out.empty() || out.back() != ' ')
      out += c;
  return out;
}

// The line of `text` that starts with `prefix`, or "".
std::string line_starting(const std::string &text, const std::string &prefix) {
  for (const std::string &line : lines_of(text))
    if (line.rfind(prefix, 0) == 0)
      return line;
  return "";
}

// "md|csv|json" in "[... -o md|csv|json]" -> {"md", "csv", "json"}.
std::vector<std::string> output_formats(const std::string &synopsis) {
  const size_t at = synopsis.find("[-o ");
  const size_t end = synopsis.find(']', at);
  if (at == std::string::npos || end == std::string::npos)
    return {};
  std::vector<std::string> formats;
  std::stringstream list(synopsis.substr(at + 4, end - at - 4));
  for (std::string format; std::getline(list, format, '|');)
    formats.push_back(format);
  return formats;
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

TEST(CliDocs, BenchHelpShowsTheSynopsisOfTheDocsAndEveryFormatWorks) {
  const std::string documented = line_starting(cli_doc(), "bonsai bench ");
  ASSERT_FALSE(documented.empty()) << "no bench synopsis in docs/cli.md";
  const auto help = run_bonsai({"bench", "--help"});
  ASSERT_EQ(help.exit_code, 0);
  EXPECT_EQ(squeeze_spaces(lines_of(help.out).at(0)), "usage: " + squeeze_spaces(documented));
  EXPECT_NE(help.out.find("-np N,..."), std::string::npos) << help.out;
  const std::vector<std::string> formats = output_formats(documented);
  EXPECT_EQ(formats, (std::vector<std::string>{"md", "csv", "json", "jsonl"})) << documented;
  for (const std::string &format : formats) {
    const auto r = run_bonsai({"bench", "-m", data_file("tiny-q1.gguf"), "-p", "8", "-n", "0", "-r",
                               "1", "-t", "1", "-o", format});
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
    EXPECT_NE(r.out.find("pp8"), std::string::npos) << format << ": " << r.out;
  }
}

TEST(CliDocs, FormatsMdGivesInfoOnlyTheFlagsItTakes) {
  // The RoPE overrides apply to every model command, info included (it
  // prints their effect); -c sizes a context, which info never opens.
  const std::string formats = doc("formats.md");
  ASSERT_NE(formats.find("(not `info`, which only reads the file), `-c/--ctx-size N`"),
            std::string::npos);
  for (const char *command : {"run", "chat", "eval", "bench", "info"}) {
    const std::string help = run_bonsai({command, "--help"}).out;
    for (const char *flag :
         {"--rope-scaling", "--rope-scale", "--rope-freq-base", "--yarn-orig-ctx"})
      EXPECT_NE(help.find(std::string(flag) + " "), std::string::npos) << command << " " << flag;
    EXPECT_EQ(help.find("--ctx-size") != std::string::npos, std::string(command) != "info")
        << command;
  }
  const auto info = run_bonsai({"info", "-m", data_file("tiny-q1.gguf"), "--rope-scale", "2"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(line_starting(info.out, "rope:").find(" linear, factor 2,"), std::string::npos)
      << info.out;
  EXPECT_EQ(run_bonsai({"info", "-m", data_file("tiny-q1.gguf"), "-c", "8"}).exit_code, 2);
}

TEST(CliDocs, EmbeddingMdNamesTheLogPrefixTheLibraryPrints) {
  // tiny-q1 has no chat template: chat mode warns that it uses plain ChatML.
  const auto r = run_bonsai(
      {"run", "-m", data_file("tiny-q1.gguf"), "-p", "hi", "--chat", "-n", "1", "--no-progress"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.rfind("bonsai warning: chat template: ", 0), 0u) << r.err;
  const auto info = run_bonsai({"run", "-m", data_file("tiny-q1.gguf"), "-p", "hi", "-n", "1",
                                "--no-progress", "--log-level", "info"});
  EXPECT_EQ(info.err.rfind("bonsai info: ", 0), 0u) << info.err;
  const std::string embedding = doc("embedding.md");
  EXPECT_NE(embedding.find("`bonsai warning: `"), std::string::npos);
  EXPECT_NE(embedding.find("`bonsai info: `"), std::string::npos);
  EXPECT_EQ(embedding.find("bonsai warn:"), std::string::npos);
}

} // namespace
} // namespace bonsai::test
