// bonsai chat driven as a person would: through a pseudo-terminal, typing a
// line, reading the reply up to the next "> " prompt; and as a script would,
// through pipes.

#include "cli_harness.hpp"

namespace bonsai::test {
namespace {

const std::string kTiny = data_file("tiny-q1.gguf");
const milliseconds kReplyTimeout(120000);

// The screen without the stats line (its timings differ from run to run).
std::string without_stats(const std::string &screen) {
  std::string kept;
  for (const auto &line : lines_of(screen))
    if (line.rfind("stats: ", 0) != 0)
      kept += line + "\n";
  return kept;
}

std::vector<std::string> chat_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {bonsai_program(), "chat", "-m", kTiny, "--no-progress"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(Chat, TwoTurnsThroughATerminal) {
  PtyChild chat(chat_args({"-n", "8", "--temp", "0", "--ignore-eos", "--stats"}));
  const std::string banner = chat.read_until_idle_suffix("> ", kReplyTimeout);
  EXPECT_NE(banner.find("/exit"), std::string::npos) << banner;

  chat.type("Hello there\n");
  const std::string first = chat.read_until_idle_suffix("> ", kReplyTimeout);
  EXPECT_NE(first.find("Hello there"), std::string::npos) << "the terminal echoes the input";
  EXPECT_NE(first.find("generated 8 tokens"), std::string::npos) << first;
  EXPECT_EQ(first.find("reused"), std::string::npos) << "nothing to reuse on the first turn";

  chat.type("And then?\n");
  const std::string second = chat.read_until_idle_suffix("> ", kReplyTimeout);
  EXPECT_NE(second.find("generated 8 tokens"), std::string::npos) << second;
  // The history is kept: the KV cache already holds the first exchange.
  EXPECT_GT(number_after(second, "tokens (+"), 10) << second;
  EXPECT_NE(second.find(" reused)"), std::string::npos) << second;

  chat.type("/exit\n");
  const auto r = chat.finish(milliseconds(30000));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST(Chat, ResetStartsOver) {
  PtyChild chat(chat_args({"-n", "4", "--temp", "0", "--ignore-eos", "--stats"}));
  chat.read_until_idle_suffix("> ", kReplyTimeout);
  chat.type("First question\n");
  const std::string first = chat.read_until_idle_suffix("> ", kReplyTimeout);
  chat.type("/reset\n");
  EXPECT_NE(chat.read_until_idle_suffix("> ", kReplyTimeout).find("(conversation cleared)"),
            std::string::npos);
  chat.type("First question\n");
  const std::string again = chat.read_until_idle_suffix("> ", kReplyTimeout);
  // Same conversation from scratch: same reply, nothing reused.
  EXPECT_EQ(again.find("reused"), std::string::npos) << again;
  EXPECT_EQ(without_stats(again), without_stats(first));
  chat.type("/exit\n");
  EXPECT_EQ(chat.finish(milliseconds(30000)).exit_code, 0);
}

TEST(Chat, CtrlCStopsTheReplyNotTheProgram) {
  PtyChild chat(chat_args({"-n", "-1", "--ignore-eos"}));
  chat.read_until_idle_suffix("> ", kReplyTimeout);
  const std::string question = "Tell me everything\n";
  chat.type(question);
  // Once the endless reply is under way, press Ctrl-C (the terminal turns
  // it into SIGINT for the program).
  ASSERT_TRUE(chat.wait_for_output(question.size() + 40, kReplyTimeout));
  chat.type("\x03");
  const std::string screen = chat.read_until_idle_suffix("> ", kReplyTimeout);
  EXPECT_NE(screen.find("(reply stopped)"), std::string::npos) << screen;
  chat.type("/exit\n");
  const auto r = chat.finish(milliseconds(30000));
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST(Chat, CtrlCAtThePromptExits) {
  PtyChild chat(chat_args({"-n", "4"}));
  chat.read_until_idle_suffix("> ", kReplyTimeout);
  chat.type("\x03");
  const auto r = chat.finish(milliseconds(30000));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 130) << r.out;
}

TEST(Chat, PipedInputGivesTheRepliesAloneOnStdout) {
  // Not a terminal: lines from a pipe, then end of input. No "> " prompts
  // (nobody is typing), so stdout is exactly the two replies, each ended by
  // a line break; the empty line is skipped.
  TempDir dir;
  const std::string saved = dir.file("conversation.json");
  const auto r = run_bonsai({"chat", "-m", kTiny, "-n", "4", "--temp", "0", "--ignore-eos"},
                            "Hello\n\nHi again\n/save " + saved + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string replies = replies_as_printed(saved);
  EXPECT_EQ(lines_of(replies).size(), 2u) << replies; // the tiny model's words hold no line break
  EXPECT_EQ(r.out, replies);
}

TEST(Chat, ADraftKeepsTheGreedyReplies) {
  // Two turns, greedy, with the model itself as draft model and with a
  // lookup draft: the replies are the plain ones (the second turn continues
  // the cache the first left, drafts included).
  const std::vector<std::string> base = {"chat",
                                         "-m",
                                         kTiny,
                                         "-n",
                                         "12",
                                         "--temp",
                                         "0",
                                         "--ignore-eos",
                                         "--no-progress",
                                         "--backend-options",
                                         "kernels=reference"};
  const std::string input = "Hello\nHi again\n";
  const auto plain = run_bonsai(base, input);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const std::vector<std::string> &extra :
       {std::vector<std::string>{"-md", kTiny, "--draft-p-min", "0", "--stats"},
        std::vector<std::string>{"--draft-ngram", "1", "--stats"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const auto drafted = run_bonsai(args, input);
    ASSERT_EQ(drafted.exit_code, 0) << drafted.err;
    EXPECT_EQ(drafted.out, plain.out) << extra[0];
  }
}

TEST(Chat, SlashCommandsSaveClearAndLoadTheConversation) {
  TempDir dir;
  const std::string saved = dir.file("conversation.json");
  const auto r =
      run_bonsai({"chat", "-m", kTiny, "-n", "3", "--temp", "0", "--ignore-eos", "--no-progress"},
                 "/system Be brief.\nfirst \\\nsecond\n/save " + saved + "\n/clear\n/load " +
                     saved + "\n/system\n/help\n/think maybe\n/nope\n/exit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("(system message set)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(saved 3 messages to " + saved + ")"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(conversation cleared)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(loaded 3 messages from " + saved + ")"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(system message: Be brief.)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/save FILE"), std::string::npos) << "the /help list: " << r.err;
  EXPECT_NE(r.err.find("/think takes on or off, not 'maybe'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown command /nope"), std::string::npos) << r.err;
  // The file holds the system message, the two-line user turn (a trailing
  // backslash joins lines) and the reply.
  const mini_json::Value doc = mini_json::parse_file(saved);
  ASSERT_EQ(doc["messages"].size(), 3u);
  EXPECT_EQ(doc["messages"][0]["role"].as_string(), "system");
  EXPECT_EQ(doc["messages"][0]["content"].as_string(), "Be brief.");
  EXPECT_EQ(doc["messages"][1]["content"].as_string(), "first \nsecond");
  EXPECT_EQ(doc["messages"][2]["role"].as_string(), "assistant");
}

TEST(Chat, AFullContextDropsTheOldestTurnsAndGoesOn) {
  // 64 tokens of context and 8 per reply: the third turn no longer fits.
  const auto r = run_bonsai({"chat", "-m", kTiny, "-c", "64", "-n", "8", "--temp", "0",
                             "--ignore-eos", "--no-progress", "--stats", "--system", "Be brief."},
                            "one two three four five\nsix seven eight nine ten\n"
                            "eleven twelve thirteen\nfourteen fifteen sixteen\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("(context full: dropped the 2 oldest messages)"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
  // Every line got a reply: one stats line each.
  size_t replies = 0;
  for (const std::string &line : lines_of(r.err))
    replies += line.rfind("stats: ", 0) == 0;
  EXPECT_EQ(replies, 4u) << r.err;
}

} // namespace
} // namespace bonsai::test
