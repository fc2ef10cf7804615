// Tool calling end to end (docs/server.md, "Tools"): the scripted fake plugin
// makes the model reply with <tool_call> blocks, and the server must return
// OpenAI's tool_calls, whole and streamed; a block that does not parse stays
// content; the fields of a request are checked.
#include <gtest/gtest.h>

#include "scripted_server.hpp"

namespace {

using namespace server_test;

const json kWeatherTool = {{"type", "function"},
                           {"function",
                            {{"name", "get_weather"},
                             {"description", "Current weather in a city"},
                             {"parameters",
                              {{"type", "object"},
                               {"properties", {{"city", {{"type", "string"}}}}},
                               {"required", {"city"}}}}}}};

const std::string kTwoCalls =
    "I will check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
    "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Rome\"}}\n</tool_call><|im_end|>";

json tools_body() {
  return {{"tools", {kWeatherTool}}};
}

TEST(ServerTools, CallsInTheReplyBecomeToolCalls) {
  const ScriptedServer s(script_of(kTwoCalls));
  const auto r = s.chat(tools_body());
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = parse(r.body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  const json message = choice["message"];
  EXPECT_EQ(message["content"], "I will check both.");
  ASSERT_EQ(message["tool_calls"].size(), 2u) << r.body;
  const char *cities[] = {"Paris", "Rome"};
  for (size_t i = 0; i < 2; ++i) {
    const json call = message["tool_calls"][i];
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
    EXPECT_EQ(call["function"]["name"], "get_weather");
    // arguments is a JSON string, as OpenAI sends it.
    ASSERT_TRUE(call["function"]["arguments"].is_string());
    EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()),
              json({{"city", cities[i]}}));
  }
  EXPECT_NE(message["tool_calls"][0]["id"], message["tool_calls"][1]["id"]);
}

TEST(ServerTools, StreamedCallsOpenWithIdAndNameThenCarryTheArguments) {
  const ScriptedServer s(script_of(kTwoCalls));
  json body = tools_body();
  body["stream"] = true;
  const auto r = s.chat(body);
  ASSERT_EQ(r.status, 200) << r.body;
  std::string content;
  std::vector<json> opened; // by index: id, type, name
  std::vector<std::string> arguments(2, "");
  std::string finish;
  for (const std::string &data : sse_data(r.body)) {
    if (data == "[DONE]")
      break;
    const json choice = parse(data)["choices"][0];
    const json delta = choice["delta"];
    if (delta.contains("content"))
      content += delta["content"].get<std::string>();
    if (delta.contains("tool_calls"))
      for (const json &call : delta["tool_calls"]) {
        const size_t index = call["index"].get<size_t>();
        ASSERT_LT(index, 2u);
        if (call.contains("id")) {
          EXPECT_EQ(index, opened.size()) << "calls open in order";
          EXPECT_EQ(call["type"], "function");
          EXPECT_EQ(call["function"]["arguments"], "");
          opened.push_back(call);
        } else {
          ASSERT_LT(index, opened.size()) << "arguments before the call opened";
          arguments[index] += call["function"]["arguments"].get<std::string>();
        }
      }
    if (!choice["finish_reason"].is_null())
      finish = choice["finish_reason"].get<std::string>();
  }
  EXPECT_EQ(content, "I will check both.");
  ASSERT_EQ(opened.size(), 2u);
  EXPECT_EQ(opened[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(arguments[0]), json({{"city", "Paris"}}));
  EXPECT_EQ(json::parse(arguments[1]), json({{"city", "Rome"}}));
  EXPECT_EQ(finish, "tool_calls");
}

TEST(ServerTools, ParallelToolCallsFalseKeepsTheFirstCall) {
  const ScriptedServer s(script_of(kTwoCalls));
  json body = tools_body();
  body["parallel_tool_calls"] = false;
  const auto r = s.chat(body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(parse(r.body)["choices"][0]["message"]["tool_calls"].size(), 1u);
}

TEST(ServerTools, ACallThatDoesNotParseIsContentNotAnError) {
  const std::string broken = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\"}"
                             "\n</tool_call><|im_end|>";
  const ScriptedServer s(script_of(broken));
  const auto r = s.chat(tools_body());
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = parse(r.body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
  EXPECT_EQ(choice["message"]["content"],
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\"}\n</tool_call>");
}

TEST(ServerTools, WithoutToolsOrWithChoiceNoneNothingIsParsed) {
  const ScriptedServer s(script_of(kTwoCalls));
  for (const json &extra :
       {json::object(), json({{"tools", {kWeatherTool}}, {"tool_choice", "none"}})}) {
    const auto r = s.chat(extra);
    ASSERT_EQ(r.status, 200) << r.body;
    const json choice = parse(r.body)["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "stop");
    EXPECT_FALSE(choice["message"].contains("tool_calls"));
    EXPECT_NE(choice["message"]["content"].get<std::string>().find("<tool_call>"),
              std::string::npos);
  }
}

TEST(ServerTools, AnAgentLoopSendsCallsAndResultsBack) {
  const ScriptedServer s(script_of("It is 18C in Paris.<|im_end|>"));
  const json messages = {
      {{"role", "user"}, {"content", "Weather in Paris?"}},
      {{"role", "assistant"},
       {"content", nullptr},
       {"tool_calls",
        {{{"id", "call_1"},
          {"type", "function"},
          {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18C"}}};
  const auto with_tools = s.chat(tools_body(), messages);
  ASSERT_EQ(with_tools.status, 200) << with_tools.body;
  EXPECT_EQ(parse(with_tools.body)["choices"][0]["message"]["content"], "It is 18C in Paris.");
  // The tool list is in the prompt: it is longer than without it.
  const auto without = s.chat(json::object(), messages);
  ASSERT_EQ(without.status, 200) << without.body;
  EXPECT_GT(parse(with_tools.body)["usage"]["prompt_tokens"].get<int>(),
            parse(without.body)["usage"]["prompt_tokens"].get<int>() + 50);
}

TEST(ServerTools, BadToolFieldsAreRefusedByName) {
  const ScriptedServer s(script_of("ok<|im_end|>"));
  struct Case {
    json extra;
    const char *param;
  };
  const Case cases[] = {
      {{{"tools", "get_weather"}}, "tools"},
      {{{"tools", {{{"function", {{"name", "f"}}}}}}}, "tools[0].type"},
      {{{"tools", {{{"type", "function"}, {"function", {{"description", "x"}}}}}}},
       "tools[0].function.name"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "bad name!"}}}}}}},
       "tools[0].function.name"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", 3}}}}}}},
       "tools[0].function.parameters"},
      {{{"tool_choice", "required"}}, "tool_choice"},
      {{{"tools", {kWeatherTool}},
        {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}},
       "tool_choice"},
      {{{"tools", {kWeatherTool}}, {"tool_choice", {{"type", "function"}}}}, "tool_choice"},
      {{{"tools", {kWeatherTool}}, {"tool_choice", "sometimes"}}, "tool_choice"},
      {{{"parallel_tool_calls", "yes"}}, "parallel_tool_calls"},
  };
  for (const Case &c : cases) {
    const auto r = s.chat(c.extra);
    EXPECT_EQ(r.status, 400) << c.extra.dump() << " -> " << r.body;
    if (r.status == 400) {
      EXPECT_EQ(parse(r.body)["error"]["param"], c.param) << c.extra.dump();
    }
  }
}

} // namespace
