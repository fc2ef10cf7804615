// The chat's parts apart from the program: the reasoning filter, the slash
// command parser and the conversation file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "chat_commands.hpp"
#include "conversation_file.hpp"
#include "think_filter.hpp"

namespace bonsai::cli {
namespace {

std::string run_filter(ThinkingDisplay display, const std::vector<std::string> &pieces) {
  ThinkFilter filter(display);
  std::string out;
  for (const std::string &piece : pieces)
    out += filter.push(piece);
  return out + filter.finish();
}

// A reply whose tags are split across pieces, as a token stream splits them.
const std::vector<std::string> kSplitReply = {"<th",   "ink>\nWhy", " not?</thi",
                                              "nk>\n", "\nYes",     ", <b>"};

TEST(ThinkFilter, ShowPassesEverythingThrough) {
  EXPECT_EQ(run_filter(ThinkingDisplay::show, kSplitReply),
            "<think>\nWhy not?</think>\n\nYes, <b>");
}

TEST(ThinkFilter, DimWrapsTheReasoningInFaintAndReset) {
  EXPECT_EQ(run_filter(ThinkingDisplay::dim, kSplitReply),
            "\x1b[2m<think>\nWhy not?</think>\x1b[0m\n\nYes, <b>");
}

TEST(ThinkFilter, HideDropsTheReasoningAndTheBlankLinesAfterIt) {
  EXPECT_EQ(run_filter(ThinkingDisplay::hide, kSplitReply), "Yes, <b>");
}

TEST(ThinkFilter, AReplyCutInsideTheReasoningEndsTheStyle) {
  EXPECT_EQ(run_filter(ThinkingDisplay::dim, {"<think>hmm"}), "\x1b[2m<think>hmm\x1b[0m");
  EXPECT_EQ(run_filter(ThinkingDisplay::hide, {"<think>hmm"}), "");
  // A held-back "<" that never became a tag is printed at the end.
  EXPECT_EQ(run_filter(ThinkingDisplay::hide, {"a <"}), "a <");
}

TEST(ThinkFilter, KnowsWhenAReplyStopsInsideItsReasoning) {
  for (const ThinkingDisplay display :
       {ThinkingDisplay::show, ThinkingDisplay::dim, ThinkingDisplay::hide}) {
    ThinkFilter cut(display); // the default -n ran out mid-thought
    cut.push("<thi");
    cut.push("nk>\nFirst, the user");
    cut.finish();
    EXPECT_TRUE(cut.in_reasoning());
    ThinkFilter answered(display);
    for (const std::string &piece : kSplitReply)
      answered.push(piece);
    answered.finish();
    EXPECT_FALSE(answered.in_reasoning());
    ThinkFilter almost(display); // "<thi" never became a tag
    const std::string printed = almost.push("a <thi");
    EXPECT_EQ(printed + almost.finish(), "a <thi");
    EXPECT_FALSE(almost.in_reasoning());
  }
}

TEST(ThinkFilter, HideShowsOnlyTheAnswerOfAWholeReply) {
  // What Qwen3 writes with thinking on: reasoning, a blank line, the answer.
  const std::string reply =
      "<think>\nThe user greets me. I greet back.\n</think>\n\nHello! How can I help?";
  EXPECT_EQ(run_filter(ThinkingDisplay::hide, {reply}), "Hello! How can I help?");
  EXPECT_EQ(run_filter(ThinkingDisplay::show, {reply}), reply);
  // One character at a time, as the tokens of a tag can come.
  std::vector<std::string> chars;
  for (const char c : reply)
    chars.emplace_back(1, c);
  EXPECT_EQ(run_filter(ThinkingDisplay::hide, chars), "Hello! How can I help?");
  EXPECT_EQ(run_filter(ThinkingDisplay::show, chars), reply);
}

TEST(ThinkFilter, ParsesTheThinkingFlag) {
  EXPECT_EQ(parse_thinking_display("", true), ThinkingDisplay::dim);
  EXPECT_EQ(parse_thinking_display("", false), ThinkingDisplay::show);
  EXPECT_EQ(parse_thinking_display("show", true), ThinkingDisplay::show);
  EXPECT_EQ(parse_thinking_display("dim", false), ThinkingDisplay::dim);
  EXPECT_EQ(parse_thinking_display("hide", true), ThinkingDisplay::hide);
  EXPECT_EQ(parse_thinking_display("off", true), std::nullopt);
}

TEST(ChatCommands, ParsesEachCommandAndItsArgument) {
  EXPECT_EQ(parse_chat_command("hello").kind, ChatCommand::message);
  EXPECT_EQ(parse_chat_command("//etc/hosts").argument, "/etc/hosts");
  EXPECT_EQ(parse_chat_command("//etc/hosts").kind, ChatCommand::message);
  EXPECT_EQ(parse_chat_command("/quit").kind, ChatCommand::exit);
  EXPECT_EQ(parse_chat_command("/reset").kind, ChatCommand::clear);
  EXPECT_EQ(parse_chat_command("/clear").kind, ChatCommand::clear);
  const ChatCommand system = parse_chat_command("/system   Be brief.  ");
  EXPECT_EQ(system.kind, ChatCommand::system);
  EXPECT_EQ(system.argument, "Be brief.");
  EXPECT_EQ(parse_chat_command("/think off").argument, "off");
  EXPECT_EQ(parse_chat_command("/think").argument, "");
  EXPECT_EQ(parse_chat_command("/think maybe").kind, ChatCommand::invalid);
  EXPECT_EQ(parse_chat_command("/save").kind, ChatCommand::invalid);
  EXPECT_EQ(parse_chat_command("/load a b.json").argument, "a b.json");
  const ChatCommand unknown = parse_chat_command("/frobnicate");
  EXPECT_EQ(unknown.kind, ChatCommand::invalid);
  EXPECT_NE(unknown.argument.find("unknown command /frobnicate"), std::string::npos);
}

class ConversationFile : public ::testing::Test {
protected:
  std::filesystem::path file(const std::string &name) {
    return std::filesystem::temp_directory_path() /
           ("bonsai-conv-" + std::to_string(getpid()) + "-" + name);
  }
  void write(const std::filesystem::path &path, const std::string &text) {
    std::ofstream(path) << text;
    written_.push_back(path);
  }
  void TearDown() override {
    for (const auto &path : written_)
      std::filesystem::remove(path);
  }
  std::vector<std::filesystem::path> written_;
};

TEST_F(ConversationFile, SavedConversationsLoadBackAsTheyWere) {
  const std::vector<ChatMessage> messages = {
      {"system", "Be brief."}, {"user", "Say \"hi\"\nand stop"}, {"assistant", "hi ✓"}};
  const auto path = file("round.json");
  written_.push_back(path);
  save_conversation(path, messages);
  const std::vector<ChatMessage> loaded = load_conversation(path);
  ASSERT_EQ(loaded.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(loaded[i].role, messages[i].role);
    EXPECT_EQ(loaded[i].content, messages[i].content);
  }
}

TEST_F(ConversationFile, AnOpenAiStyleArrayLoadsToo) {
  const auto path = file("array.json");
  write(path, R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])");
  const auto loaded = load_conversation(path);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[1].content, "Hello");
}

TEST_F(ConversationFile, BadFilesAreRefusedWithTheReason) {
  struct Case {
    const char *text;
    const char *expected;
  };
  for (const Case &c :
       {Case{"not json", "not a JSON conversation"},
        Case{R"({"messages": []})", "without \"format\": \"bonsai-chat\""},
        Case{R"({"format": 1, "messages": []})", "without \"format\": \"bonsai-chat\""},
        Case{R"([{"role": "user", "content": "x", "n": 1e999}])", "not a JSON conversation"},
        Case{R"([{"role": "tool", "content": "x"}])", "has role 'tool'"},
        Case{R"([{"content": "x"}])", "message 1 has no \"role\" string"},
        Case{R"([{"role": "user", "content": 3}])", "no \"content\" string"},
        Case{R"([{"role": "user", "content": "a"}, {"role": "system",
                              "content": "b"}])",
             "message 2 is a system message; only the first may be one"},
        Case{R"({"format": "bonsai-chat", "version": 2, "messages": []})",
             "a conversation of version 2; this bonsai reads version 1"},
        Case{R"({"format": "bonsai-chat", "version": "1", "messages": []})",
             "a conversation of version \"1\""}}) {
    const auto path = file("bad.json");
    write(path, c.text);
    try {
      load_conversation(path);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(load_conversation(file("missing.json")), Error);
  // A directory is refused with an Error naming it, which the chat reports
  // and goes on from (a stream error escaping here once ended the chat).
  try {
    load_conversation(std::filesystem::temp_directory_path());
    ADD_FAILURE() << "a directory was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace bonsai::cli
