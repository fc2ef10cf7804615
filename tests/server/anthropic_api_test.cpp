// Anthropic's Messages API end to end (docs/server.md, "Anthropic Messages
// API"): the scripted fake plugin makes the model reply a known text, and the
// Message, its event stream, tool use, stop reasons, count_tokens and the
// errors must be exactly Anthropic's shapes for it. The translation of a
// conversation with tool use and results is checked against the same
// conversation sent to Chat Completions, on the real tiny model.
#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "scripted_server.hpp"

namespace {

using namespace server_test;

const json kWeatherTool = {{"name", "get_weather"},
                           {"description", "Current weather in a city"},
                           {"input_schema", kWeatherParameters}};

json hello(json extra = json::object()) {
  json body = {{"model", "claude-sonnet-4-5"},
               {"max_tokens", 64},
               {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  body.update(extra);
  return body;
}

httplib::Response messages(const ScriptedServer &s, const json &body) {
  return post_with(s.server->port(), "/v1/messages", body, {{"anthropic-version", "2023-06-01"}});
}

// The tokens of the script the model writes, its closing <|im_end|> not counted.
int32_t reply_tokens(const std::string &script) {
  return static_cast<int32_t>(token_count(script)) - 1;
}

TEST(ServerMessages, a_reply_is_a_message_with_its_thinking_when_thinking_is_asked_for) {
  const ScriptedServer s(script_of(kThinkThenText));
  const auto r = messages(s, hello({{"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const json m = parse(r.body);
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["model"], "tiny-q1"); // the served model, whatever the request named
  EXPECT_EQ(m["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(m["content"], json::parse(R"([
    {"type": "thinking", "thinking": "I need the weather.", "signature": ""},
    {"type": "text", "text": "It is sunny."}])"));
  EXPECT_EQ(m["stop_reason"], "end_turn");
  EXPECT_TRUE(m["stop_sequence"].is_null());
  EXPECT_EQ(m["usage"]["output_tokens"], reply_tokens(kThinkThenText));
  EXPECT_GT(
      m["usage"]["input_tokens"].get<int>() + m["usage"]["cache_read_input_tokens"].get<int>(), 0);
}

TEST(ServerMessages, thinking_that_was_not_asked_for_is_not_shown) {
  const ScriptedServer s(script_of(kThinkThenText));
  const auto r = messages(s, hello());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(parse(r.body)["content"], json::parse(R"([{"type": "text", "text": "It is sunny."}])"));
}

TEST(ServerMessages, the_stream_is_anthropics_event_sequence_and_adds_up_to_the_message) {
  const ScriptedServer s(script_of(kThinkThenText));
  const json body = hello({{"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}});
  const json whole = parse(messages(s, body).body);
  json streamed_body = body;
  streamed_body["stream"] = true;
  const auto r = messages(s, streamed_body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.get_header_value("Content-Type"), "text/event-stream");
  const std::vector<NamedEvent> events = named_events(r.body);
  ASSERT_GE(events.size(), 8u) << r.body;
  // Every event's name is its data's type.
  for (const NamedEvent &e : events)
    EXPECT_EQ(e.name, e.data["type"]) << e.data;
  EXPECT_EQ(events[0].name, "message_start");
  EXPECT_EQ(events[0].data["message"]["content"], json::array());
  EXPECT_TRUE(events[0].data["message"]["stop_reason"].is_null());
  EXPECT_EQ(events[1].name, "ping");
  EXPECT_EQ(events[events.size() - 2].name, "message_delta");
  EXPECT_EQ(events.back().name, "message_stop");
  const json &end = events[events.size() - 2].data;
  EXPECT_EQ(end["delta"]["stop_reason"], "end_turn");
  EXPECT_EQ(end["usage"]["output_tokens"], whole["usage"]["output_tokens"]);

  // The blocks, rebuilt from start, delta and stop events in order.
  json blocks = json::array();
  int open = -1;
  for (size_t i = 2; i + 2 < events.size(); ++i) {
    const json &e = events[i].data;
    if (events[i].name == "content_block_start") {
      ASSERT_EQ(open, -1) << "a block opens while another is open";
      open = e["index"];
      ASSERT_EQ(open, static_cast<int>(blocks.size()));
      blocks.push_back(e["content_block"]);
    } else if (events[i].name == "content_block_delta") {
      ASSERT_EQ(e["index"], open);
      json &block = blocks[static_cast<size_t>(open)];
      const json &delta = e["delta"];
      if (delta["type"] == "thinking_delta")
        block["thinking"] =
            block["thinking"].get<std::string>() + delta["thinking"].get<std::string>();
      else if (delta["type"] == "text_delta")
        block["text"] = block["text"].get<std::string>() + delta["text"].get<std::string>();
      else
        FAIL() << e;
    } else {
      ASSERT_EQ(events[i].name, "content_block_stop");
      ASSERT_EQ(e["index"], open);
      open = -1;
    }
  }
  EXPECT_EQ(open, -1);
  ASSERT_EQ(blocks.size(), 2u) << blocks;
  EXPECT_EQ(blocks[0]["type"], "thinking");
  EXPECT_EQ(blocks[1], whole["content"][1]);
  // The stream keeps the reasoning's white space; the whole message trims it.
  std::string thinking = blocks[0]["thinking"];
  while (!thinking.empty() && thinking.back() == '\n')
    thinking.pop_back();
  EXPECT_EQ(thinking, whole["content"][0]["thinking"]);
}

TEST(ServerMessages, a_tool_call_is_a_tool_use_block_whole_and_streamed) {
  const ScriptedServer s(script_of(kToolCall));
  const json body = hello({{"tools", {kWeatherTool}}});
  const auto r = messages(s, body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json m = parse(r.body);
  EXPECT_EQ(m["stop_reason"], "tool_use");
  ASSERT_EQ(m["content"].size(), 1u) << m;
  const json &use = m["content"][0];
  EXPECT_EQ(use["type"], "tool_use");
  EXPECT_EQ(use["name"], "get_weather");
  EXPECT_EQ(use["input"], json({{"city", "Paris"}})); // an object, not a JSON text
  EXPECT_EQ(use["id"].get<std::string>().rfind("toolu_", 0), 0u);

  json streamed_body = body;
  streamed_body["stream"] = true;
  const std::vector<NamedEvent> events = named_events(messages(s, streamed_body).body);
  std::vector<std::string> names;
  for (const NamedEvent &e : events)
    names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "ping", "content_block_start",
                                             "content_block_delta", "content_block_stop",
                                             "message_delta", "message_stop"}));
  ASSERT_EQ(events.size(), 7u);
  const json start = events[2].data["content_block"];
  EXPECT_EQ(start["type"], "tool_use");
  EXPECT_EQ(start["name"], "get_weather");
  EXPECT_EQ(start["input"], json::object());
  const json delta = events[3].data["delta"];
  EXPECT_EQ(delta["type"], "input_json_delta");
  EXPECT_EQ(json::parse(delta["partial_json"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(events[5].data["delta"]["stop_reason"], "tool_use");
}

TEST(ServerMessages, tool_choice_none_leaves_the_call_as_text) {
  const ScriptedServer s(script_of(kToolCall));
  const auto r =
      messages(s, hello({{"tools", {kWeatherTool}}, {"tool_choice", {{"type", "none"}}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const json m = parse(r.body);
  EXPECT_EQ(m["stop_reason"], "end_turn");
  EXPECT_EQ(m["content"][0]["type"], "text");
  EXPECT_NE(m["content"][0]["text"].get<std::string>().find("<tool_call>"), std::string::npos);
}

TEST(ServerMessages, a_stop_sequence_ends_the_reply_and_is_named) {
  const ScriptedServer s(script_of("One two STOP three END four<|im_end|>"));
  const auto r = messages(s, hello({{"stop_sequences", {"END", "STOP"}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const json m = parse(r.body);
  EXPECT_EQ(m["stop_reason"], "stop_sequence");
  EXPECT_EQ(m["stop_sequence"], "STOP");
  EXPECT_EQ(m["content"][0]["text"], "One two ");
}

TEST(ServerMessages, max_tokens_ends_the_reply_with_stop_reason_max_tokens) {
  const ScriptedServer s(script_of(kThinkThenText));
  const auto r = messages(s, hello({{"max_tokens", 3}, {"stream", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<NamedEvent> events = named_events(r.body);
  ASSERT_GE(events.size(), 2u);
  const json &end = events[events.size() - 2].data;
  EXPECT_EQ(end["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(end["usage"]["output_tokens"], 3);
}

TEST(ServerMessages, count_tokens_counts_the_prompt_a_request_runs) {
  const ScriptedServer s(script_of(kToolCall));
  const json body = hello({{"system", "Be brief."}, {"tools", {kWeatherTool}}});
  const auto counted = post_with(s.server->port(), "/v1/messages/count_tokens",
                                 {{"model", "m"},
                                  {"system", body["system"]},
                                  {"tools", body["tools"]},
                                  {"messages", body["messages"]}});
  ASSERT_EQ(counted.status, 200) << counted.body;
  const json usage = parse(messages(s, body).body)["usage"];
  EXPECT_EQ(parse(counted.body),
            json({{"input_tokens", usage["input_tokens"].get<int>() +
                                       usage["cache_read_input_tokens"].get<int>()}}));
  // max_tokens belongs to a create request: counting ignores it and says so.
  const auto with_max = post_with(s.server->port(), "/v1/messages/count_tokens", hello());
  EXPECT_EQ(with_max.status, 200) << with_max.body;
  EXPECT_EQ(with_max.get_header_value("Bonsai-Ignored-Fields"), "max_tokens");
}

TEST(ServerMessages, bad_requests_get_anthropics_error_shape) {
  const ScriptedServer s(script_of(kThinkThenText));
  const auto expect_error = [&](const json &body, const std::string &text) {
    const auto r = messages(s, body);
    EXPECT_EQ(r.status, 400) << body;
    const json error = json::parse(r.body, nullptr, false);
    EXPECT_EQ(error["type"], "error") << r.body;
    EXPECT_EQ(error["error"]["type"], "invalid_request_error") << r.body;
    EXPECT_NE(error["error"]["message"].get<std::string>().find(text), std::string::npos) << r.body;
  };
  json no_max = hello();
  no_max.erase("max_tokens");
  expect_error(no_max, "'max_tokens' is required");
  expect_error(hello({{"temperature", 1.5}}), "'temperature' must be between 0 and 1");
  expect_error(hello({{"top_k", "x"}}), "'top_k' must be an integer");
  expect_error(hello({{"messages", json::array()}}), "'messages' must be a non-empty list");
  expect_error(hello({{"messages", {{{"role", "tool"}, {"content", "x"}}}}}),
               "'messages[0].role' must be \"user\", \"assistant\" or \"system\"");
  expect_error(
      hello({{"messages",
              {{{"role", "user"}, {"content", "a"}}, {{"role", "assistant"}, {"content", "b"}}}}}),
      "prefill");
  expect_error(hello({{"tool_choice", {{"type", "any"}}}}), "'tool_choice' \"any\" needs 'tools'");
  expect_error(
      hello({{"tools", {kWeatherTool}}, {"tool_choice", {{"type", "tool"}, {"name", "x"}}}}),
      "not in 'tools'");
  expect_error(hello({{"thinking", {{"type", "enabled"}}}}), "budget_tokens");
  expect_error(hello({{"thinking", {{"type", "adaptive"}, {"display", "loud"}}}}),
               "'thinking.display'");
  expect_error(hello({{"output_config", {{"effort", "extreme"}}}}), "'output_config.effort'");
  expect_error(hello({{"mcp_servers", {{{"type", "url"}, {"url", "http://x"}}}}}), "MCP");
}

TEST(ServerMessages, the_key_may_come_as_x_api_key_and_errors_keep_anthropics_shape) {
  bonsai::server::ServerOptions options = server_options();
  options.api_keys = {"secret"};
  const RunningServer server(options, 512, "tiny-q1.gguf", false);
  const auto without = post_with(server.port(), "/v1/messages", hello());
  EXPECT_EQ(without.status, 401);
  EXPECT_EQ(parse(without.body)["error"]["type"], "authentication_error") << without.body;
  EXPECT_EQ(parse(without.body)["type"], "error");
  EXPECT_EQ(post_with(server.port(), "/v1/messages", hello(), {{"x-api-key", "wrong"}}).status,
            401);
  EXPECT_EQ(post_with(server.port(), "/v1/messages", hello({{"max_tokens", 2}}),
                      {{"x-api-key", "secret"}, {"anthropic-version", "2023-06-01"}})
                .status,
            200);
  EXPECT_EQ(post_with(server.port(), "/v1/messages", hello({{"max_tokens", 2}}),
                      {{"Authorization", "Bearer secret"}})
                .status,
            200);
  // The same key works on the OpenAI side too.
  EXPECT_EQ(post_with(server.port(), "/v1/completions", {{"prompt", "a"}, {"max_tokens", 1}},
                      {{"x-api-key", "secret"}})
                .status,
            200);
}

// The translation of a conversation with system blocks, thinking, a tool
// call, its result and a second question: the same prompt as the
// conversation in Chat Completions' shape, so the same greedy reply.
TEST(ServerMessages, a_conversation_with_tool_use_and_results_is_the_chat_prompt) {
  const RunningServer server(comparing_options(), 1024, "tiny-q1.gguf", false);
  const json anthropic = {
      {"model", "m"},
      {"max_tokens", 8},
      {"temperature", 0},
      {"system",
       {{{"type", "text"},
         {"text", "You are terse."},
         {"cache_control", {{"type", "ephemeral"}}}}}},
      {"tools", {kWeatherTool}},
      {"messages",
       {{{"role", "user"}, {"content", "Weather in Paris?"}},
        {{"role", "assistant"},
         {"content",
          {{{"type", "thinking"}, {"thinking", "I should call the tool."}, {"signature", "x"}},
           {{"type", "text"}, {"text", "Let me check."}},
           {{"type", "tool_use"},
            {"id", "toolu_1"},
            {"name", "get_weather"},
            {"input", {{"city", "Paris"}}}}}}},
        {{"role", "user"},
         {"content",
          {{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "18C"}},
           {{"type", "text"}, {"text", "And tomorrow?"}}}}}}}};
  json chat = translated_chat("Let me check.", "I should call the tool.");
  chat["enable_thinking"] = false; // as a request that does not ask for thinking
  const auto a = post_with(server.port(), "/v1/messages", anthropic);
  const auto c = post_with(server.port(), "/v1/chat/completions", chat);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(c.status, 200) << c.body;
  const json am = parse(a.body), cm = parse(c.body);
  EXPECT_EQ(am["usage"]["input_tokens"].get<int>() +
                am["usage"]["cache_read_input_tokens"].get<int>(),
            cm["usage"]["prompt_tokens"]);
  EXPECT_EQ(am["content"][0]["text"], cm["choices"][0]["message"]["content"]);
  EXPECT_EQ(am["usage"]["output_tokens"], cm["usage"]["completion_tokens"]);
}

} // namespace
