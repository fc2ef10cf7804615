// The reasoning split of chat replies (server/src/reply/reasoning_split.hpp): a
// think block at the start becomes reasoning, whatever pieces the text
// arrives in; expectations written out by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reply/reasoning_split.hpp"

namespace {

using bonsai::server::ReasoningSplit;
using bonsai::server::ReplyParts;

// Feeds `pieces` one after another and joins what comes out.
ReplyParts run(bool open, const std::vector<std::string> &pieces) {
  ReasoningSplit split(open);
  ReplyParts all;
  for (const std::string &piece : pieces) {
    const ReplyParts out = split.feed(piece);
    all.reasoning += out.reasoning;
    all.content += out.content;
  }
  const ReplyParts rest = split.finish();
  all.reasoning += rest.reasoning;
  all.content += rest.content;
  return all;
}

// Every way of cutting `text` into two pieces gives the same split.
void expect_split(bool open, const std::string &text, const std::string &reasoning,
                  const std::string &content) {
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const ReplyParts got = run(open, {text.substr(0, cut), text.substr(cut)});
    EXPECT_EQ(got.reasoning, reasoning) << "cut at " << cut << " of: " << text;
    EXPECT_EQ(got.content, content) << "cut at " << cut << " of: " << text;
  }
  // And one character at a time.
  std::vector<std::string> chars;
  for (char c : text)
    chars.emplace_back(1, c);
  const ReplyParts got = run(open, chars);
  EXPECT_EQ(got.reasoning, reasoning) << text;
  EXPECT_EQ(got.content, content) << text;
}

TEST(ReasoningSplit, ThinkBlockAtTheStartIsReasoning) {
  expect_split(false, "<think>\nPlan: add.\n</think>\n\nThe answer is 4.", "Plan: add.\n",
               "The answer is 4.");
}

TEST(ReasoningSplit, LeadingWhitespaceBeforeTheBlockIsDropped) {
  expect_split(false, "\n <think>x</think>y", "x", "y");
}

TEST(ReasoningSplit, ReplyWithoutABlockIsAllContent) {
  expect_split(false, "Hello <think> is just text here", "", "Hello <think> is just text here");
  expect_split(false, "  <thin", "", "  <thin"); // a tag that never completes
}

TEST(ReasoningSplit, ABlockLaterInTheReplyIsContent) {
  expect_split(false, "Sure. <think>x</think>", "", "Sure. <think>x</think>");
}

TEST(ReasoningSplit, PromptThatOpenedTheBlockStartsInReasoning) {
  expect_split(true, "\nstep one</think>\n\ndone", "step one", "done");
}

TEST(ReasoningSplit, UnclosedBlockIsAllReasoning) {
  expect_split(false, "<think>still thinking when cut off", "still thinking when cut off", "");
  expect_split(true, "partial </thi", "partial </thi", "");
}

TEST(ReasoningSplit, AToolCallEndsTheReasoningAndIsContent) {
  expect_split(false, "<think>I should call it.\n<tool_call>{\"name\":\"f\"}</tool_call>",
               "I should call it.\n", "<tool_call>{\"name\":\"f\"}</tool_call>");
}

TEST(ReasoningSplit, EmptyBlock) {
  expect_split(false, "<think>\n\n</think>\n\nHi", "", "Hi");
}

} // namespace
