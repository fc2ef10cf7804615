// What Codex and the OpenAI Agents SDK send (docs/server.md, "OpenAI
// Responses API", "Tools"): namespace tools, an output format together with
// tools (the reply is calls or one JSON value of the format), reasoning
// summaries, top_logprobs; and the llama-server / vLLM extensions bonsai
// honours on Chat Completions (ignore_eos, min_tokens).
#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "scripted_server.hpp"

namespace {

using namespace server_test;

httplib::Response responses(const ScriptedServer &s, const json &body) {
  return post_with(s.server->port(), "/v1/responses", body);
}

const json kCityFormat = {
    {"type", "json_schema"},
    {"name", "answer"},
    {"schema",
     {{"type", "object"},
      {"properties", {{"city", {{"type", "string"}}}, {"temperature", {{"type", "number"}}}}},
      {"required", {"city", "temperature"}},
      {"additionalProperties", false}}}};
const json kWeatherFunction = {
    {"type", "function"}, {"name", "get_weather"}, {"parameters", kWeatherParameters}};

// A namespace's functions are shown under NAMESPACE__NAME; a call of one
// comes back with its name and namespace apart, as Codex offered them.
TEST(AgentFormats, a_namespace_call_comes_back_with_its_namespace) {
  const ScriptedServer s(
      script_of("<tool_call>\n{\"name\": \"agents__close_agent\", \"arguments\": "
                "{\"target\": \"a1\"}}\n</tool_call><|im_end|>"));
  const json group = {
      {"type", "namespace"},
      {"name", "agents"},
      {"description", "Sub-agents"},
      {"tools",
       {{{"type", "function"},
         {"name", "close_agent"},
         {"parameters",
          {{"type", "object"}, {"properties", {{"target", {{"type", "string"}}}}}}}}}}};
  const auto r = responses(s, {{"input", "Close a1"}, {"tools", {group}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json output = parse(r.body)["output"];
  ASSERT_FALSE(output.empty()) << r.body;
  const json &call = output.back();
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["name"], "close_agent");
  EXPECT_EQ(call["namespace"], "agents");
  EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), json({{"target", "a1"}}));
  // The same call sent back in the history is the same prompt as its flat
  // name: what the model was shown.
  const auto prompt_of = [&](const json &call_item) {
    const auto back =
        responses(s, {{"input",
                       {{{"role", "user"}, {"content", "Close a1"}},
                        call_item,
                        {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "done"}}}},
                      {"tools", {group}},
                      {"max_output_tokens", 1}});
    EXPECT_EQ(back.status, 200) << back.body;
    return parse(back.body)["usage"]["input_tokens"].get<int>();
  };
  EXPECT_EQ(prompt_of({{"type", "function_call"},
                       {"call_id", "c1"},
                       {"name", "close_agent"},
                       {"namespace", "agents"},
                       {"arguments", "{\"target\": \"a1\"}"}}),
            prompt_of({{"type", "function_call"},
                       {"call_id", "c1"},
                       {"name", "agents__close_agent"},
                       {"arguments", "{\"target\": \"a1\"}"}}));
}

// Tools and an output format: the reply may call a tool...
TEST(AgentFormats, tools_and_a_format_let_the_reply_call_a_tool) {
  const ScriptedServer s(script_of(kToolCall));
  const auto r = responses(
      s,
      {{"input", "Weather?"}, {"tools", {kWeatherFunction}}, {"text", {{"format", kCityFormat}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json output = parse(r.body)["output"];
  EXPECT_EQ(output.back()["type"], "function_call") << r.body;
  EXPECT_EQ(output.back()["name"], "get_weather");
  const auto chat =
      post_with(s.server->port(), "/v1/chat/completions",
                {{"messages", {{{"role", "user"}, {"content", "Weather?"}}}},
                 {"tools",
                  {{{"type", "function"},
                    {"function", {{"name", "get_weather"}, {"parameters", kWeatherParameters}}}}}},
                 {"response_format",
                  {{"type", "json_schema"},
                   {"json_schema", {{"name", "a"}, {"schema", kCityFormat["schema"]}}}}}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(parse(chat.body)["choices"][0]["finish_reason"], "tool_calls") << chat.body;
}

// ...or answer with one value of the format, and nothing else: a reply
// that is neither is held to the grammar (here: the value, cut short of
// the prose that followed it).
TEST(AgentFormats, tools_and_a_format_let_the_reply_answer_in_the_format) {
  const ScriptedServer s(script_of("{\"city\": \"Paris\", \"temperature\": 18}<|im_end|>"));
  const auto r = responses(
      s,
      {{"input", "Weather?"}, {"tools", {kWeatherFunction}}, {"text", {{"format", kCityFormat}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json reply = parse(r.body);
  EXPECT_EQ(json::parse(reply["output_text"].get<std::string>()),
            json({{"city", "Paris"}, {"temperature", 18}}))
      << r.body;
  // A reply of prose is not let through: whatever comes out is a call or a
  // value of the format.
  const ScriptedServer prose(script_of("It is sunny in Paris.<|im_end|>"));
  const auto held = responses(prose, {{"input", "Weather?"},
                                      {"tools", {kWeatherFunction}},
                                      {"text", {{"format", kCityFormat}}},
                                      {"max_output_tokens", 48}});
  ASSERT_EQ(held.status, 200) << held.body;
  const json out = parse(held.body);
  const json last = out["output"].back();
  if (last["type"] == "message") {
    const std::string text = out["output_text"].get<std::string>();
    EXPECT_EQ(text.front(), '{') << held.body;
  } else {
    EXPECT_EQ(last["type"], "function_call") << held.body;
  }
}

// reasoning.summary: the think block comes as the reasoning item's summary
// part, streamed as reasoning_summary_* events (how Codex shows it).
TEST(AgentFormats, a_reasoning_summary_is_the_think_block_as_summary_parts) {
  const ScriptedServer s(script_of(kThinkThenText));
  const json body = {{"input", "Weather?"},
                     {"reasoning", {{"effort", "medium"}, {"summary", "auto"}}}};
  const auto whole = responses(s, body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json reasoning = parse(whole.body)["output"][0];
  EXPECT_EQ(reasoning["type"], "reasoning");
  EXPECT_EQ(reasoning["summary"],
            json::array({{{"type", "summary_text"}, {"text", "I need the weather."}}}));
  EXPECT_EQ(reasoning["content"], json::array());
  json streamed = body;
  streamed["stream"] = true;
  const auto stream = responses(s, streamed);
  ASSERT_EQ(stream.status, 200);
  std::string deltas;
  std::vector<std::string> names;
  for (const NamedEvent &event : named_events(stream.body)) {
    names.push_back(event.name);
    if (event.name == "response.reasoning_summary_text.delta")
      deltas += event.data["delta"].get<std::string>();
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "response.reasoning_summary_part.added"),
            names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "response.reasoning_summary_part.done"),
            names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "response.reasoning_text.delta"), names.end());
  EXPECT_NE(deltas.find("I need the weather."), std::string::npos) << stream.body;
}

// top_logprobs: every token of the answer's text has its log probability and
// that many alternatives, and the tokens spell the text.
TEST(AgentFormats, top_logprobs_give_each_output_text_token) {
  const ScriptedServer s(script_of("It is sunny.<|im_end|>"));
  const auto r = responses(
      s, {{"input", "Weather?"}, {"top_logprobs", 2}, {"reasoning", {{"effort", "none"}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json part = parse(r.body)["output"].back()["content"][0];
  ASSERT_EQ(part["type"], "output_text");
  std::string spelled;
  for (const json &token : part["logprobs"]) {
    spelled += token["token"].get<std::string>();
    EXPECT_LE(token["logprob"].get<double>(), 0.0);
    EXPECT_EQ(token["top_logprobs"].size(), 2u);
  }
  EXPECT_EQ(spelled, part["text"].get<std::string>()) << r.body;
  EXPECT_EQ(part["text"], "It is sunny.");
}

// ignore_eos: the reply runs past the end of the turn to max_tokens;
// min_tokens: the end of the turn is held back until that many tokens.
TEST(AgentFormats, ignore_eos_and_min_tokens) {
  const ScriptedServer s(script_of("Hi.<|im_end|>"));
  const json user = {{{"role", "user"}, {"content", "Hello"}}};
  const auto plain =
      s.chat({{"max_tokens", 12}, {"chat_template_kwargs", {{"enable_thinking", false}}}});
  ASSERT_EQ(plain.status, 200) << plain.body;
  const int natural = parse(plain.body)["usage"]["completion_tokens"].get<int>();
  EXPECT_LT(natural, 12);
  const auto ignored = s.chat({{"max_tokens", 12},
                               {"ignore_eos", true},
                               {"chat_template_kwargs", {{"enable_thinking", false}}}});
  ASSERT_EQ(ignored.status, 200) << ignored.body;
  EXPECT_EQ(parse(ignored.body)["usage"]["completion_tokens"], 12) << ignored.body;
  EXPECT_EQ(parse(ignored.body)["choices"][0]["finish_reason"], "length");
  const auto held = s.chat({{"max_tokens", 12},
                            {"min_tokens", natural + 3},
                            {"chat_template_kwargs", {{"enable_thinking", false}}}});
  ASSERT_EQ(held.status, 200) << held.body;
  EXPECT_GE(parse(held.body)["usage"]["completion_tokens"].get<int>(), natural + 3) << held.body;
}

} // namespace
