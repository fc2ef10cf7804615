// Bad input: one clear "bonsai: error: ..." line on stderr, nothing on
// stdout, exit code 2 for command-line mistakes and 1 for runtime errors.
#include <cstring>
#include <fstream>

#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

const std::string kTiny = data_file("tiny-q1.gguf");

// Asserts the error contract and returns the message after the prefix.
void expect_error(const ProcessResult &r, int exit_code, const std::string &needle) {
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, exit_code) << r.err;
  EXPECT_EQ(r.out, "") << "stdout must stay empty on errors";
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << "expected exactly one line on stderr, got:\n" << r.err;
  EXPECT_EQ(lines[0].rfind("bonsai: error: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(needle), std::string::npos)
      << "message should mention '" << needle << "': " << lines[0];
}

// A minimal valid GGUF v3 file whose only metadata is general.architecture.
void write_gguf_with_architecture(const std::string &path, const std::string &arch) {
  std::ofstream out(path, std::ios::binary);
  auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char *>(&v), 4); };
  auto u64 = [&](uint64_t v) { out.write(reinterpret_cast<const char *>(&v), 8); };
  auto str = [&](const std::string &s) {
    u64(s.size());
    out.write(s.data(), static_cast<std::streamsize>(s.size()));
  };
  out.write("GGUF", 4);
  u32(3); // version
  u64(0); // tensors
  u64(1); // metadata entries
  str("general.architecture");
  u32(8); // string
  str(arch);
}

TEST(BadInput, NoArgumentsPrintsUsage) {
  const auto r = run_bonsai({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("usage: bonsai <command>"), std::string::npos) << r.err;
}

TEST(BadInput, UnknownCommand) {
  expect_error(run_bonsai({"frobnicate"}), 2, "unknown command 'frobnicate'");
}

// The commands `bonsai --help` lists: the first word of each line between
// "commands:" and the blank line after it.
std::vector<std::string> listed_commands() {
  const auto help = run_bonsai({"--help"});
  std::vector<std::string> names;
  bool in_list = false;
  for (const std::string &line : lines_of(help.out)) {
    if (in_list && line.empty())
      break;
    if (in_list)
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    in_list = in_list || line == "commands:";
  }
  return names;
}

TEST(BadInput, UnknownCommandListsEveryCommand) {
  const std::vector<std::string> names = listed_commands();
  ASSERT_EQ(names.size(), 7u); // run chat eval info backends bench serve
  EXPECT_EQ(names.back(), "serve");
  std::string list;
  for (const std::string &name : names) {
    list += (list.empty() ? "" : ", ") + name;
    // Each one really is a command: its --help works.
    EXPECT_EQ(run_bonsai({name, "--help"}).exit_code, 0) << name;
  }
  expect_error(run_bonsai({"frobnicate"}), 2, "(commands: " + list + "; see bonsai --help)");
}

TEST(BadInput, UnknownFlag) {
  expect_error(run_bonsai({"run", "-m", kTiny, "-p", "hi", "--bogus"}), 2, "'--bogus'");
}

TEST(BadInput, AbbreviatedFlagIsNotGuessed) {
  expect_error(run_bonsai({"run", "-m", kTiny, "-p", "hi", "--n-pred", "4"}), 2, "'--n-pred'");
}

TEST(BadInput, MissingModelFlag) {
  expect_error(run_bonsai({"run", "-p", "hi"}), 2, "no model given");
  expect_error(run_bonsai({"info"}), 2, "no model given");
  expect_error(run_bonsai({"eval", "--tokens", "1,2"}), 2, "no model given");
}

TEST(BadInput, MissingPrompt) {
  expect_error(run_bonsai({"run", "-m", kTiny}), 2, "no prompt given");
}

TEST(BadInput, PromptAndFileTogether) {
  expect_error(run_bonsai({"run", "-m", kTiny, "-p", "hi", "-f", "x.txt"}), 2,
               "cannot be used together");
}

TEST(BadInput, ChatAndNoChatTogether) {
  expect_error(run_bonsai({"run", "-m", kTiny, "-p", "hi", "--chat", "--no-chat"}), 2,
               "--chat and --no-chat");
}

TEST(BadInput, MissingPromptFile) {
  expect_error(run_bonsai({"run", "-m", kTiny, "-f", "/nonexistent/prompt.txt"}), 1,
               "/nonexistent/prompt.txt: cannot open");
}

// Files given on the command line that are no text file: one line naming
// the file and the flag (a stream error once leaked through), and an
// endless stream refused at a bound instead of filling the memory.
TEST(BadInput, PromptOrSchemaFileThatIsNoFile) {
  const std::string dir = ::testing::TempDir();
  expect_error(run_bonsai({"run", "-m", kTiny, "-f", dir}), 1, "is a directory, not the file -f");
  expect_error(run_bonsai({"run", "-m", kTiny, "-p", "hi", "--json-schema-file", dir}), 1,
               "is a directory, not the file --json-schema-file");
  expect_error(run_bonsai({"run", "-m", kTiny, "-f", "/dev/zero"}), 1, "holds more than 64 MiB");
}

TEST(BadInput, StopWithASchema) {
  expect_error(run_bonsai({"run", "-m", kTiny, "-p", "hi", "--json-schema", "{}", "--stop", "}"}),
               2, "--stop cannot be used with --json-schema");
}

// bonsai --help and --version take nothing after them; "help COMMAND" is
// that command's help.
TEST(BadInput, WordsAfterHelpOrVersion) {
  expect_error(run_bonsai({"--version", "--bogus"}), 2, "unexpected argument '--bogus' after");
  expect_error(run_bonsai({"--help", "extra"}), 2, "unexpected argument 'extra' after --help");
  const ProcessResult help = run_bonsai({"help", "run"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_EQ(help.out.rfind("usage: bonsai run", 0), 0u) << help.out;
}

// A llama.cpp flag that is ignored says so only when the command line is
// good: a bad one gets its error alone.
TEST(BadInput, IgnoredFlagNotesWaitForAGoodCommandLine) {
  expect_error(run_bonsai({"run", "-m", kTiny, "-p", "hi", "-fa", "bogus"}), 2, "'bogus'");
}

TEST(BadInput, MissingModelFile) {
  expect_error(run_bonsai({"run", "-m", "/nonexistent/model.gguf", "-p", "hi"}), 1,
               "/nonexistent/model.gguf: model file not found");
  expect_error(run_bonsai({"info", "-m", "/nonexistent/model.gguf"}), 1, "model file not found");
}

TEST(BadInput, NotAGgufFile) {
  const std::string json = data_file("tiny-q1.prompt.json");
  expect_error(run_bonsai({"run", "-m", json, "-p", "hi"}), 1, "not a GGUF file");
  expect_error(run_bonsai({"info", "-m", json}), 1, "not a GGUF file");
}

TEST(BadInput, UnsupportedArchitecture) {
  TempDir dir;
  const std::string path = dir.file("llama.gguf");
  write_gguf_with_architecture(path, "llama");
  expect_error(run_bonsai({"run", "-m", path, "-p", "hi"}), 1, "llama");
  expect_error(run_bonsai({"info", "-m", path}), 1, "llama");
}

TEST(BadInput, UnknownBackend) {
  expect_error(run_bonsai({"run", "-m", kTiny, "-p", "hi", "--backend", "nosuchbackend"}), 1,
               "nosuchbackend");
}

TEST(BadInput, PromptLongerThanContext) {
  std::string long_prompt;
  for (int i = 0; i < 200; ++i)
    long_prompt += "the quick brown fox ";
  expect_error(run_bonsai({"run", "-m", kTiny, "--no-chat", "-c", "64", "-p", long_prompt}), 1,
               "does not fit in the context of 64 tokens");
}

TEST(BadInput, GreedyPastContext) {
  expect_error(run_bonsai({"eval", "-m", kTiny, "-c", "16", "--tokens", "1,2,3", "--greedy", "20"}),
               1, "--greedy 20 goes past the context");
}

TEST(BadInput, TokenIdOutsideVocabulary) {
  expect_error(run_bonsai({"eval", "-m", kTiny, "--tokens", "1,2048"}), 1,
               "id 2048 (item 2) is outside the model's vocabulary of 2048");
}

TEST(BadInput, MalformedTokenList) {
  expect_error(run_bonsai({"eval", "-m", kTiny, "--tokens", "1,,2"}), 2, "--tokens");
  expect_error(run_bonsai({"eval", "-m", kTiny, "--tokens", "1,-3"}), 2, "'-3'");
  expect_error(run_bonsai({"eval", "-m", kTiny, "--tokens", "1,x"}), 2, "'x'");
}

TEST(BadInput, TokensAndPromptTogether) {
  expect_error(run_bonsai({"eval", "-m", kTiny, "--tokens", "1", "-p", "hi"}), 2,
               "exactly one of --tokens");
  expect_error(run_bonsai({"eval", "-m", kTiny}), 2, "exactly one of --tokens");
}

TEST(BadInput, ServeSchedulingFlags) {
  expect_error(run_bonsai({"serve", "-m", kTiny, "--itl-budget", "0.5"}), 2,
               "--itl-budget must be 0 (off) or a number >= 1");
  expect_error(run_bonsai({"serve", "-m", kTiny, "--itl-budget", "inf"}), 2,
               "--itl-budget must be 0 (off) or a number >= 1");
  expect_error(run_bonsai({"serve", "-m", kTiny, "--prefill-chunk", "0"}), 2,
               "--prefill-chunk must be >= 1");
}

// Each row: a flag, a bad value, and what the message must name.
struct BadValue {
  const char *flag;
  const char *value;
  const char *needle;
};

class BadValueTest : public ::testing::TestWithParam<BadValue> {};

TEST_P(BadValueTest, IsAUsageError) {
  const BadValue &p = GetParam();
  expect_error(run_bonsai({"run", "-m", kTiny, "-p", "hi", p.flag, p.value}), 2, p.needle);
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, BadValueTest,
    ::testing::Values(BadValue{"--temp", "-0.5", "--temp must be >= 0"},
                      BadValue{"--temp", "nan", "--temp must be a finite number"},
                      BadValue{"--temp", "warm", "'warm'"},
                      BadValue{"--top-p", "0", "--top-p must be in (0, 1]"},
                      BadValue{"--top-p", "1.5", "--top-p must be in (0, 1]"},
                      BadValue{"--min-p", "-0.1", "--min-p must be in [0, 1]"},
                      BadValue{"--min-p", "2", "--min-p must be in [0, 1]"},
                      BadValue{"--top-k", "-1", "--top-k must be >= 0"},
                      BadValue{"--repeat-penalty", "0", "--repeat-penalty must be > 0"},
                      BadValue{"--repeat-last-n", "-2", "--repeat-last-n must be >= 0"},
                      BadValue{"--presence-penalty", "inf", "--presence-penalty must be a finite"},
                      BadValue{"--frequency-penalty", "nan",
                               "--frequency-penalty must be a finite"},
                      BadValue{"--seed", "-5", "--seed must be >= 0"},
                      BadValue{"-n", "-2", "-n/--n-predict must be >= 0, or -1"},
                      BadValue{"-c", "-1", "-c/--ctx-size must be >= 0"},
                      BadValue{"-b", "0", "-b/--batch-size must be >= 1"},
                      BadValue{"-t", "-1", "-t/--threads must be in 0..1024"},
                      BadValue{"-t", "1025", "-t/--threads must be in 0..1024"},
                      BadValue{"--stop", "", "--stop must not be empty"},
                      BadValue{"--rope-scale", "0", "--rope-scale must be a context factor"},
                      BadValue{"--rope-freq-base", "0", "--rope-freq-base must be > 0, got 0"},
                      BadValue{"--yarn-orig-ctx", "0", "--yarn-orig-ctx must be > 0, got 0"},
                      BadValue{"--log-level", "loud", "--log-level must be one of"}),
    [](const ::testing::TestParamInfo<BadValue> &info) {
      std::string name = std::to_string(info.index) + "_";
      for (const char *c = info.param.flag; *c; ++c)
        if (std::isalnum(static_cast<unsigned char>(*c)))
          name += *c;
      return name;
    });

} // namespace
} // namespace bonsai::test
