// What Claude Code sends on the Messages API (docs/server.md, "Anthropic
// Messages API"), in requests written here in its shapes: system turns
// inside `messages`, its billing-header block, adaptive thinking with an
// effort and `display`, deferred tools loaded by a tool_reference, a
// max_tokens past the context, and the overflow in Anthropic's words. The
// prompts are checked against the Qwen3 chat text written by hand.
#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "scripted_server.hpp"

namespace {

using namespace server_test;

const std::string kStart = "<|im_start|>";
const std::string kEnd = "<|im_end|>\n";
// The assistant turn the prompt opens: tiny-q1's chat template is plain
// ChatML (no <think> handling), so thinking on or off opens it the same way.
const std::string kAnswerTurn = "<|im_start|>assistant\n";

std::string turn(const std::string &role, const std::string &text) {
  return kStart + role + "\n" + text + kEnd;
}

int count_tokens(const ScriptedServer &s, const json &body) {
  const auto r = post_with(s.server->port(), "/v1/messages/count_tokens", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? parse(r.body)["input_tokens"].get<int>() : -1;
}

httplib::Response create(const ScriptedServer &s, json body) {
  if (!body.contains("max_tokens"))
    body["max_tokens"] = 64;
  return post_with(s.server->port(), "/v1/messages", body, {{"anthropic-version", "2023-06-01"}});
}

TEST(ClaudeCodeShapes, a_system_turn_in_messages_is_rendered_where_it_stands) {
  const ScriptedServer s(script_of("Hi.<|im_end|>"));
  const json body = {
      {"system",
       {{{"type", "text"}, {"text", "Be brief."}, {"cache_control", {{"type", "ephemeral"}}}}}},
      {"messages",
       {{{"role", "user"}, {"content", "Say hi"}},
        {{"role", "system"},
         {"content", {{{"type", "text"}, {"text", "# Environment\ncwd: /tmp"}}}},
         {"output_config", {{"effort", "medium"}}}}}}};
  const std::string expected = turn("system", "Be brief.") + turn("user", "Say hi") +
                               turn("system", "# Environment\ncwd: /tmp") + kAnswerTurn;
  EXPECT_EQ(count_tokens(s, body), static_cast<int>(token_count(expected)));
  const auto r = create(s, body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(parse(r.body)["content"][0]["text"], "Hi.");
  EXPECT_FALSE(r.has_header("Bonsai-Ignored-Fields"))
      << r.get_header_value("Bonsai-Ignored-Fields");
  // The conversation still ends with the user: an assistant turn last is a
  // prefill, refused as before.
  const auto prefill = create(s, {{"messages",
                                   {{{"role", "user"}, {"content", "a"}},
                                    {{"role", "assistant"}, {"content", "b"}},
                                    {{"role", "system"}, {"content", "c"}}}}});
  EXPECT_EQ(prefill.status, 400);
  EXPECT_NE(prefill.body.find("prefill"), std::string::npos) << prefill.body;
}

TEST(ClaudeCodeShapes, the_billing_header_block_is_left_out_of_the_prompt) {
  const ScriptedServer s(script_of("Hi.<|im_end|>"));
  const auto with_header = [](const std::string &version) {
    return json{{"system",
                 {{{"type", "text"},
                   {"text", "x-anthropic-billing-header: cc_version=" + version +
                                "; cc_entrypoint=sdk-cli;"}},
                  {{"type", "text"}, {"text", "You are an agent."}}}},
                {"messages", {{{"role", "user"}, {"content", "Hello"}}}}};
  };
  const std::string expected =
      turn("system", "You are an agent.") + turn("user", "Hello") + kAnswerTurn;
  EXPECT_EQ(count_tokens(s, with_header("2.1.332.0b8")), static_cast<int>(token_count(expected)));
  EXPECT_EQ(count_tokens(s, with_header("2.1.332.ca6")), static_cast<int>(token_count(expected)));
  // A second session (another header) reads the shared prompt from the cache.
  ASSERT_EQ(create(s, with_header("2.1.332.0b8")).status, 200);
  const auto second = create(s, with_header("2.1.332.ca6"));
  ASSERT_EQ(second.status, 200) << second.body;
  const json usage = parse(second.body)["usage"];
  EXPECT_GT(usage["cache_read_input_tokens"].get<int>(), 10) << usage;
}

// thinking: adaptive turns the think block on; display "omitted" keeps the
// thinking but not its block in the reply; output_config.effort sets the
// budget (low: 1,024 tokens), budget_tokens wins over it.
TEST(ClaudeCodeShapes, adaptive_thinking_effort_and_display) {
  const ScriptedServer s(script_of("<think>Let me see.</think>\n\nHi.<|im_end|>"));
  const json user = {{{"role", "user"}, {"content", "Hello"}}};
  EXPECT_EQ(count_tokens(s, {{"messages", user}, {"thinking", {{"type", "adaptive"}}}}),
            static_cast<int>(token_count(turn("user", "Hello") + kAnswerTurn)));
  const auto shown = create(s, {{"messages", user}, {"thinking", {{"type", "adaptive"}}}});
  ASSERT_EQ(shown.status, 200) << shown.body;
  EXPECT_EQ(parse(shown.body)["content"][0]["type"], "thinking") << shown.body;
  const auto omitted =
      create(s, {{"messages", user}, {"thinking", {{"type", "adaptive"}, {"display", "omitted"}}}});
  ASSERT_EQ(omitted.status, 200) << omitted.body;
  const json content = parse(omitted.body)["content"];
  ASSERT_EQ(content.size(), 1u) << omitted.body;
  EXPECT_EQ(content[0]["type"], "text");
  EXPECT_EQ(content[0]["text"], "Hi.");
  // A budget below the block's length puts </think> in its place.
  const auto capped = create(s, {{"messages", user},
                                 {"thinking", {{"type", "enabled"}, {"budget_tokens", 1}}},
                                 {"output_config", {{"effort", "high"}}}});
  ASSERT_EQ(capped.status, 200) << capped.body;
  const json blocks = parse(capped.body)["content"];
  EXPECT_EQ(blocks[0]["type"], "thinking");
  EXPECT_LT(blocks[0]["thinking"].get<std::string>().size(), std::string("Let me see.").size())
      << capped.body;
}

// A deferred tool is not in the prompt until a tool_reference loads it.
TEST(ClaudeCodeShapes, deferred_tools_appear_once_referenced) {
  const ScriptedServer s(script_of("Hi.<|im_end|>"));
  const json weather = {{"name", "get_weather"}, {"input_schema", kWeatherParameters}};
  json deferred = weather;
  deferred["defer_loading"] = true;
  const json user = {{{"role", "user"}, {"content", "Hello"}}};
  EXPECT_EQ(count_tokens(s, {{"messages", user}, {"tools", {deferred}}}),
            count_tokens(s, {{"messages", user}}));
  const json loaded = {
      {{"role", "user"}, {"content", "Find the weather tool"}},
      {{"role", "assistant"},
       {"content",
        {{{"type", "tool_use"},
          {"id", "t1"},
          {"name", "ToolSearch"},
          {"input", {{"query", "weather"}}}}}}},
      {{"role", "user"},
       {"content",
        {{{"type", "tool_result"},
          {"tool_use_id", "t1"},
          {"content", {{{"type", "tool_reference"}, {"tool_name", "get_weather"}}}}}}}}};
  const json search = {{"name", "ToolSearch"}, {"input_schema", {{"type", "object"}}}};
  EXPECT_EQ(count_tokens(s, {{"messages", loaded}, {"tools", {search, deferred}}}),
            count_tokens(s, {{"messages", loaded}, {"tools", {search, weather}}}));
}

// Claude Code asks for 128,000 tokens: the reply ends at the context's end
// with "max_tokens"; a prompt that leaves no room is refused in Anthropic's
// words, which Claude Code reads to compact the conversation.
TEST(ClaudeCodeShapes, max_tokens_past_the_context_and_the_overflow_message) {
  const ScriptedServer s(script_of("Hello.<|im_end|>"));
  const auto r =
      create(s, {{"max_tokens", 128000}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(parse(r.body)["stop_reason"], "end_turn");
  std::string long_text;
  for (int i = 0; i < 600; ++i)
    long_text += "word ";
  const auto overflow = create(s, {{"messages", {{{"role", "user"}, {"content", long_text}}}}});
  ASSERT_EQ(overflow.status, 400) << overflow.body;
  const std::string message = parse(overflow.body)["error"]["message"].get<std::string>();
  EXPECT_EQ(message.rfind("prompt is too long: ", 0), 0u) << message;
  EXPECT_NE(message.find(" tokens > 511 maximum"), std::string::npos) << message;
}

} // namespace
