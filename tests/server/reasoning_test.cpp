// Reasoning separation end to end: a fake plugin (tests/fake_plugins,
// "scripted") makes the model reply "<think>Plan it</think>\n\nSure thing"
// then <|im_end|>, token by token; the server must put the think block in
// reasoning_content (or where reasoning_format says), whole and streamed.
#include <gtest/gtest.h>

#include "scripted_server.hpp"

namespace {

using namespace server_test;

// tiny-q1's ids of <think> P l an ␠it </think> \n\n S ure ␠th ing <|im_end|>.
constexpr const char *kScript = "2003,47,75,276,432,2004,271,50,552,270,287,2002";

httplib::Response chat(const ScriptedServer &s, const json &extra = json::object()) {
  return s.chat(extra, {{{"role", "user"}, {"content", "What is 2 + 2?"}}});
}

TEST(ServerReasoning, ThinkBlockGoesToReasoningContent) {
  const ScriptedServer s(kScript);
  const auto r = chat(s);
  ASSERT_EQ(r.status, 200) << r.body;
  const json message = parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "Plan it");
  EXPECT_EQ(message["content"], "Sure thing");
  EXPECT_EQ(parse(r.body)["choices"][0]["finish_reason"], "stop");
}

TEST(ServerReasoning, StreamedReasoningComesAsItsOwnDeltas) {
  const ScriptedServer s(kScript);
  const auto r = chat(s, {{"stream", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  std::string reasoning, content;
  bool reasoning_before_content = true;
  for (const std::string &data : sse_data(r.body)) {
    if (data == "[DONE]")
      break;
    const json delta = parse(data)["choices"][0]["delta"];
    if (delta.contains("reasoning_content"))
      reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content")) {
      content += delta["content"].get<std::string>();
      if (!content.empty() && delta.contains("reasoning_content"))
        reasoning_before_content = false;
    }
  }
  EXPECT_EQ(reasoning, "Plan it");
  EXPECT_EQ(content, "Sure thing");
  EXPECT_TRUE(reasoning_before_content);
}

TEST(ServerReasoning, FormatNoneLeavesTheBlockInline) {
  const ScriptedServer s(kScript);
  const auto r = chat(s, {{"reasoning_format", "none"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json message = parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(message["content"], "<think>Plan it</think>\n\nSure thing");
  EXPECT_FALSE(message.contains("reasoning_content"));
}

TEST(ServerReasoning, FormatReasoningNamesTheFieldReasoning) {
  const ScriptedServer s(kScript);
  const auto r = chat(s, {{"reasoning_format", "reasoning"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json message = parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(message["reasoning"], "Plan it");
  EXPECT_FALSE(message.contains("reasoning_content"));
  EXPECT_EQ(message["content"], "Sure thing");
}

TEST(ServerReasoning, UnknownFormatIsABadRequestNamingTheField) {
  const ScriptedServer s(kScript);
  const auto r = chat(s, {{"reasoning_format", "everything"}});
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(parse(r.body)["error"]["param"], "reasoning_format");
  EXPECT_NE(parse(r.body)["error"]["message"].get<std::string>().find("\"everything\""),
            std::string::npos);
}

} // namespace

namespace {

// reasoning_budget 2: after "<think>", "P" and "l" the server puts </think>
// in the model's place, so the reasoning is "Pl".
TEST(ServerReasoning, BudgetClosesTheThinkBlock) {
  const ScriptedServer s(kScript);
  const auto r = chat(s, {{"reasoning_budget", 2}, {"max_tokens", 6}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(parse(r.body)["choices"][0]["message"]["reasoning_content"], "Pl");
  const auto unlimited = chat(s, {{"reasoning_budget", -1}});
  ASSERT_EQ(unlimited.status, 200) << unlimited.body;
  EXPECT_EQ(parse(unlimited.body)["choices"][0]["message"]["reasoning_content"], "Plan it");
  const auto bad = chat(s, {{"reasoning_budget", -2}});
  ASSERT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(parse(bad.body)["error"]["param"], "reasoning_budget");
}

} // namespace
