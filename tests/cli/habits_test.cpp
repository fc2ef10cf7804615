// What users of llama.cpp type, and what bonsai does with it: extra words,
// llama.cpp's flags, repeated flags, typos, absurd thread counts, stop
// strings, the seed in the stats, a chat line that is not UTF-8, and the
// plugin checker's count of skipped checks.
#include <cctype>
#include <cstdio>

#include "bonsai/bonsai_backend.h"
#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

const std::string kTiny = data_file("tiny-q1.gguf");

std::vector<std::string> run_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", "-m", kTiny, "-p", "Hello", "--no-progress"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

int generated(const std::string &err) {
  return number_after(err, "| generated ");
}

TEST(Habits, ExtraWordsAfterAPromptAreAnErrorThatNamesThem) {
  const auto r = run_bonsai({"run", "-m", kTiny, "-p", "Hello", "world", "again"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unexpected arguments 'world', 'again'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-p \"Hello world\""), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "nothing may be generated: " << r.out;
}

TEST(Habits, TheLastOfARepeatedFlagWins) {
  const auto r = run_bonsai(run_args({"-n", "2", "--temp", "0", "--ignore-eos", "-n", "5"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(generated(r.err), 5) << r.err;
}

// The CUDA plugin of the children finds no driver, so no device: what a
// machine without a GPU shows, even on one that has a GPU.
class NoGpu {
public:
  NoGpu() { setenv("BONSAI_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1); }
  ~NoGpu() { unsetenv("BONSAI_CUDA_DRIVER"); }
  NoGpu(const NoGpu &) = delete;
  NoGpu &operator=(const NoGpu &) = delete;
};

TEST(Habits, NglZeroMeansCpuAndOtherwiseTheGpuBackend) {
  // -ngl 0 after --backend cuda: the last one wins, so the CPU runs it.
  const auto cpu = run_bonsai(run_args({"-n", "1", "--backend", "cuda", "-ngl", "0"}));
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_NE(cpu.err.find("stats: backend cpu"), std::string::npos) << cpu.err;
  EXPECT_EQ(cpu.err.find("note"), std::string::npos) << cpu.err;
  const auto bad = run_bonsai(run_args({"-ngl", "all"}));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("-ngl needs a number of layers"), std::string::npos) << bad.err;
}

TEST(Habits, NglWithoutAGpuRunsOnTheCpuWithANoteThatNamesTheFlag) {
  const NoGpu no_gpu;
  // As llama.cpp does: the run goes on, on the CPU, and says why in one line.
  for (const std::vector<std::string> &flag :
       {std::vector<std::string>{"-ngl", "99"}, {"--n-gpu-layers", "1"}, {"--gpu-layers=-1"}}) {
    const std::string typed = flag.size() == 2 ? flag[0] + " " + flag[1] : "--gpu-layers -1";
    std::vector<std::string> extra = {"-n", "1"};
    extra.insert(extra.end(), flag.begin(), flag.end());
    const auto r = run_bonsai(run_args(extra));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto lines = lines_of(r.err);
    ASSERT_EQ(lines.size(), 2u) << r.err;
    EXPECT_EQ(lines[0], "bonsai: note: " + typed + ": no GPU found, running on the CPU");
    EXPECT_EQ(lines[1].rfind("stats: backend cpu |", 0), 0u) << lines[1];
  }
  // A later --backend is the user's choice: no note.
  const auto chosen = run_bonsai(run_args({"-n", "1", "-ngl", "99", "--backend", "cpu"}));
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  EXPECT_EQ(chosen.err.find("note"), std::string::npos) << chosen.err;
  // --backend cuda asks for the GPU and nothing else: a clear error.
  const auto cuda = run_bonsai(run_args({"-n", "1", "--backend", "cuda"}));
  EXPECT_EQ(cuda.exit_code, 1);
  EXPECT_TRUE(cuda.out.empty()) << cuda.out;
  EXPECT_EQ(cuda.err.rfind("bonsai: error: ", 0), 0u) << cuda.err;
  EXPECT_NE(cuda.err.find("libbonsai_cuda"), std::string::npos) << cuda.err;
}

TEST(Habits, LlamaFlagsThatDoNotApplyGetANoteAndAreNotMisread) {
  // -fa once read as "-f a" (a prompt file), -cnv as "-c nv", -tb 2 as "-t b".
  const auto r = run_bonsai(
      run_args({"-n", "1", "-fa", "-cnv", "-tb", "2", "-fa", "on", "--flash-attn", "auto"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("bonsai: note: -fa: attention is always fused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bonsai: note: -cnv: for a conversation use 'bonsai chat'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("bonsai: note: -tb: bonsai uses -t"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--flash-attn: attention"), std::string::npos) << r.err;
  // -ub is the step size, bonsai's -b: a bad value is reported as -b's.
  const auto ub = run_bonsai(run_args({"-ub", "0"}));
  EXPECT_EQ(ub.exit_code, 2);
  EXPECT_NE(ub.err.find("-b/--batch-size must be >= 1"), std::string::npos) << ub.err;
  // A value of our own flag that looks like a llama.cpp flag is a value.
  const auto text = run_bonsai({"run", "-m", kTiny, "-p", "-fa", "-n", "1", "--no-progress"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.err.find("note"), std::string::npos) << text.err;
}

TEST(Habits, AnUnknownFlagSuggestsTheNearestKnownOne) {
  const auto r = run_bonsai(run_args({"--tmp", "0.5"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unrecognised option '--tmp'; did you mean --temp?"), std::string::npos)
      << r.err;
  const auto far = run_bonsai(run_args({"--zzzzzzzz"}));
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

TEST(Habits, TooManyThreadsAreClampedWithAMessage) {
  const auto r = run_bonsai(run_args({"-n", "1", "-t", "1000"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("n_threads 1000 is more than the"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("TBB Warning"), std::string::npos) << r.err;
}

TEST(Habits, StopStringsEndTheAnswerBeforeThem) {
  const auto full = run_bonsai(run_args({"-n", "16", "--temp", "0", "--ignore-eos"}));
  ASSERT_EQ(full.exit_code, 0) << full.err;
  std::string text = full.out.substr(0, full.out.size() - 1); // the final newline
  ASSERT_GE(text.size(), 8u) << text;
  // An ASCII piece from the second half of the greedy text (never part of
  // a multi-byte character): the answer must end before it.
  size_t at = text.size() / 2;
  while (at + 3 <= text.size() && !(std::isprint(static_cast<unsigned char>(text[at])) &&
                                    std::isprint(static_cast<unsigned char>(text[at + 1])) &&
                                    std::isprint(static_cast<unsigned char>(text[at + 2]))))
    ++at;
  if (at + 3 > text.size())
    GTEST_SKIP() << "skipped: no ASCII run in the greedy text to stop at: " << text;
  const std::string stop = text.substr(at, 3);
  const size_t first = text.find(stop);
  for (const char *flag : {"--stop", "-r", "--reverse-prompt"}) {
    const auto cut = run_bonsai(run_args({"-n", "16", "--temp", "0", "--ignore-eos", flag, stop}));
    ASSERT_EQ(cut.exit_code, 0) << cut.err;
    EXPECT_EQ(cut.out, text.substr(0, first) + "\n") << flag;
    EXPECT_NE(cut.err.find("stop: stop string"), std::string::npos) << cut.err;
  }
}

TEST(Habits, TheStatsNameTheSeedAndItRepeatsTheRun) {
  const auto first = run_bonsai(run_args({"-n", "12", "--temp", "1.0", "--ignore-eos"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const size_t at = first.err.find("| seed ");
  ASSERT_NE(at, std::string::npos) << first.err;
  const std::string seed = first.err.substr(at + 7, first.err.find(' ', at + 7) - (at + 7));
  ASSERT_FALSE(seed.empty());
  ASSERT_EQ(seed.find_first_not_of("0123456789"), std::string::npos) << seed;
  const auto again =
      run_bonsai(run_args({"-n", "12", "--temp", "1.0", "--ignore-eos", "--seed", seed}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, first.out);
}

TEST(Habits, AChatLineThatIsNotUtf8IsRefusedAndTheChatGoesOn) {
  TempDir dir;
  const std::string saved = dir.file("conversation.json");
  const auto r = run_bonsai({"chat", "-m", kTiny, "-n", "3", "--temp", "0", "--ignore-eos"},
                            "bad \xff\xfe line\nHello\n/save " + saved + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("that line was not sent, type it again"), std::string::npos) << r.err;
  // Only Hello was sent, and its answer is all of stdout.
  const mini_json::Value doc = mini_json::parse_file(saved);
  ASSERT_EQ(doc["messages"].size(), 2u);
  EXPECT_EQ(doc["messages"][0]["content"].as_string(), "Hello");
  EXPECT_EQ(r.out, replies_as_printed(saved));
}

TEST(Habits, PluginCheckCountsAndNamesTheChecksItSkips) {
  const std::string plugin = std::string(BONSAI_PLUGIN_DIR) + "/libbonsai_cuda.so";
  if (!std::filesystem::exists(plugin))
    GTEST_SKIP() << "skipped: the CUDA plugin is not built in this configuration";
  setenv("BONSAI_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1); // no device, for sure
  const auto r = run_process(
      {{std::string(BONSAI_BIN_DIR) + "/bonsai-plugin-check", plugin}, "", milliseconds(60000)});
  unsetenv("BONSAI_CUDA_DRIVER");
  EXPECT_EQ(r.exit_code, 77) << r.out << r.err;
  int skip_lines = 0;
  for (const std::string &line : lines_of(r.out))
    skip_lines += line.rfind("SKIP  ", 0) == 0;
  EXPECT_NE(r.out.find("SKIP  matmul q1_0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SKIP  golden tiny-q1"), std::string::npos) << r.out;
  EXPECT_GE(skip_lines, 10) << r.out;
  EXPECT_NE(r.out.find(", " + std::to_string(skip_lines) + " skipped"), std::string::npos) << r.out;
}

TEST(Habits, RunJsonHoldsTheTextTokensFinishReasonSeedAndTimings) {
  const auto streamed = run_bonsai(run_args({"-n", "6", "--seed", "7", "--ignore-eos"}));
  const auto r = run_bonsai(run_args({"-n", "6", "--seed", "7", "--ignore-eos", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const mini_json::Value doc = mini_json::parse(r.out);
  EXPECT_EQ(doc["text"].as_string() + "\n", streamed.out); // the same run, streamed
  EXPECT_EQ(doc["tokens"].size(), 6u);
  EXPECT_EQ(doc["finish_reason"].as_string(), "length");
  EXPECT_EQ(doc["stop_reason"].as_string(), "length");
  EXPECT_EQ(doc["seed"].as_int(), 7);
  EXPECT_EQ(doc["backend"].as_string(), "cpu");
  EXPECT_EQ(doc["timings"]["generated_tokens"].as_int(), 6);
  EXPECT_EQ(doc["timings"]["decode_steps"].as_int(), 5);
  EXPECT_GT(doc["timings"]["prompt_ms"].as_number(), 0.0);
  // A stop string finishes as "stop", as OpenAI names it.
  const std::string text = doc["text"].as_string();
  size_t at = 1;
  while (at < text.size() && !std::isalnum(static_cast<unsigned char>(text[at])))
    ++at;
  if (at >= text.size())
    GTEST_SKIP() << "skipped: no ASCII letter in the sampled text to stop at: " << text;
  const auto stopped = run_bonsai(
      run_args({"-n", "6", "--seed", "7", "--ignore-eos", "--json", "--stop", text.substr(at, 1)}));
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_EQ(mini_json::parse(stopped.out)["finish_reason"].as_string(), "stop") << stopped.out;
}

TEST(Habits, DisplayPromptPrintsThePromptBeforeTheCompletion) {
  const auto plain = run_bonsai(run_args({"-n", "4", "--temp", "0", "--no-display-prompt"}));
  const auto shown = run_bonsai(run_args({"-n", "4", "--temp", "0", "--display-prompt"}));
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(shown.out, "Hello" + plain.out);
  const auto both = run_bonsai(run_args({"--display-prompt", "--no-display-prompt"}));
  EXPECT_EQ(both.exit_code, 2);
}

TEST(Habits, TheLoadProgressBarIsDrawnOnATerminalOnly) {
  const std::vector<std::string> args = {bonsai_program(), "run", "-m", kTiny, "-p",
                                         "Hello",          "-n",  "1"};
  PtyChild terminal(args);
  const ProcessResult drawn = terminal.finish(milliseconds(60000));
  EXPECT_EQ(drawn.exit_code, 0) << drawn.out;
  EXPECT_NE(drawn.out.find("loading model"), std::string::npos) << drawn.out;
  EXPECT_NE(drawn.out.find("100%"), std::string::npos) << drawn.out;
  const auto piped = run_bonsai({"run", "-m", kTiny, "-p", "Hello", "-n", "1"});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("loading model"), std::string::npos) << piped.err;
  PtyChild quiet({bonsai_program(), "run", "-m", kTiny, "-p", "Hello", "-n", "1", "--no-progress"});
  EXPECT_EQ(quiet.finish(milliseconds(60000)).out.find("loading model"), std::string::npos);
}

TEST(Habits, VersionNamesTheProgramTheAbiAndThePlugins) {
  const auto r = run_bonsai({"--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  unsigned major = 0, minor = 0, abi_major = 0, abi_minor = 0, patch = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "bonsai %u.%u.%u (plugin ABI %u.%u)", &major, &minor, &patch,
                        &abi_major, &abi_minor),
            5)
      << r.out;
  EXPECT_EQ(abi_major, BONSAI_ABI_MAJOR);
  EXPECT_EQ(abi_minor, BONSAI_ABI_MINOR);
  const std::string cpu = std::string(BONSAI_PLUGIN_DIR) + "/libbonsai_cpu.so";
  EXPECT_NE(r.out.find("  cpu    "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(cpu), std::string::npos) << r.out;
}

} // namespace
} // namespace bonsai::test
