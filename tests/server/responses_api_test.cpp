// OpenAI's Responses API end to end (docs/server.md, "OpenAI Responses API"):
// the scripted fake plugin makes the model reply a known text, and the
// Response object, its typed event stream, function calls and the refusals of
// what needs stored state must be exactly the API's shapes for it. The
// translation of input items is checked against the same conversation sent
// to Chat Completions, on the real tiny model.
#include <gtest/gtest.h>

#include "api_test_support.hpp"
#include "scripted_server.hpp"

namespace {

using namespace server_test;

const json kWeatherTool = {{"type", "function"},
                           {"name", "get_weather"},
                           {"description", "Current weather in a city"},
                           {"parameters", kWeatherParameters}};

json ask(json extra = json::object()) {
  json body = {{"model", "gpt-4.1"}, {"input", "Weather in Paris?"}};
  body.update(extra);
  return body;
}

httplib::Response responses(int port, const json &body) {
  return post_with(port, "/v1/responses", body);
}

TEST(ServerResponses, a_reply_is_a_response_with_a_reasoning_item_and_a_message) {
  const ScriptedServer s(script_of(kThinkThenText));
  const auto r = responses(s.server->port(), ask({{"instructions", "Be brief."}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const json response = parse(r.body);
  EXPECT_EQ(response["object"], "response");
  EXPECT_EQ(response["status"], "completed");
  EXPECT_EQ(response["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(response["model"], "tiny-q1");
  EXPECT_EQ(response["instructions"], "Be brief.");
  EXPECT_EQ(response["store"], false);
  EXPECT_TRUE(response["error"].is_null());
  EXPECT_TRUE(response["incomplete_details"].is_null());
  const json &output = response["output"];
  ASSERT_EQ(output.size(), 2u) << output;
  EXPECT_EQ(output[0]["type"], "reasoning");
  EXPECT_EQ(output[0]["id"].get<std::string>().rfind("rs_", 0), 0u);
  EXPECT_EQ(output[0]["content"],
            json::parse(R"([{"type": "reasoning_text", "text": "I need the weather."}])"));
  EXPECT_EQ(output[1]["type"], "message");
  EXPECT_EQ(output[1]["role"], "assistant");
  EXPECT_EQ(output[1]["status"], "completed");
  EXPECT_EQ(output[1]["content"][0]["type"], "output_text");
  EXPECT_EQ(output[1]["content"][0]["text"], "It is sunny.");
  EXPECT_EQ(response["output_text"], "It is sunny.");
  const json &usage = response["usage"];
  EXPECT_EQ(usage["output_tokens"], static_cast<int>(token_count(kThinkThenText)) - 1);
  EXPECT_EQ(usage["total_tokens"],
            usage["input_tokens"].get<int>() + usage["output_tokens"].get<int>());
}

TEST(ServerResponses, the_stream_is_typed_events_in_order_that_add_up_to_the_response) {
  const ScriptedServer s(script_of(kThinkThenText));
  const json whole = parse(responses(s.server->port(), ask()).body);
  const auto r = responses(s.server->port(), ask({{"stream", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<NamedEvent> events = named_events(r.body);
  ASSERT_GE(events.size(), 10u);
  std::vector<std::string> kinds; // the event types, runs of deltas as one
  for (size_t i = 0; i < events.size(); ++i) {
    const NamedEvent &e = events[i];
    EXPECT_EQ(e.name, e.data["type"]);
    EXPECT_EQ(e.data["sequence_number"], i);
    if (kinds.empty() || kinds.back() != e.name || e.name.find(".delta") == std::string::npos)
      kinds.push_back(e.name);
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{
                       "response.created", "response.in_progress", "response.output_item.added",
                       "response.content_part.added", "response.reasoning_text.delta",
                       "response.reasoning_text.done", "response.content_part.done",
                       "response.output_item.done", "response.output_item.added",
                       "response.content_part.added", "response.output_text.delta",
                       "response.output_text.done", "response.content_part.done",
                       "response.output_item.done", "response.completed"}));
  EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
  std::string text;
  json message_id;
  for (const NamedEvent &e : events) {
    if (e.name == "response.output_item.added" && e.data["item"]["type"] == "message")
      message_id = e.data["item"]["id"];
    if (e.name == "response.output_text.delta") {
      EXPECT_EQ(e.data["output_index"], 1);
      EXPECT_EQ(e.data["content_index"], 0);
      EXPECT_EQ(e.data["item_id"], message_id);
      text += e.data["delta"].get<std::string>();
    }
  }
  EXPECT_EQ(text, "It is sunny.");
  const json done = events.back().data["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output_text"], whole["output_text"]);
  EXPECT_EQ(done["output"][1]["content"], whole["output"][1]["content"]);
  EXPECT_EQ(done["output"][0]["content"], whole["output"][0]["content"]);
  EXPECT_EQ(done["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
}

TEST(ServerResponses, a_function_call_is_a_function_call_item_whole_and_streamed) {
  const ScriptedServer s(script_of(kToolCall));
  const auto r = responses(s.server->port(), ask({{"tools", {kWeatherTool}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const json output = parse(r.body)["output"];
  ASSERT_EQ(output.size(), 1u) << output;
  const json &call = output[0];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["status"], "completed");
  EXPECT_EQ(call["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(call["call_id"].get<std::string>().rfind("call_", 0), 0u);
  ASSERT_TRUE(call["arguments"].is_string()); // a JSON text, as OpenAI sends it
  EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), json({{"city", "Paris"}}));

  const std::vector<NamedEvent> events = named_events(
      responses(s.server->port(), ask({{"tools", {kWeatherTool}}, {"stream", true}})).body);
  std::vector<std::string> names;
  for (const NamedEvent &e : events)
    names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"response.created", "response.in_progress",
                                             "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done", "response.completed"}));
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[2].data["item"]["arguments"], "");
  EXPECT_EQ(events[2].data["item"]["name"], "get_weather");
  EXPECT_EQ(json::parse(events[3].data["delta"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(events[4].data["arguments"], events[3].data["delta"]);
}

TEST(ServerResponses, max_output_tokens_makes_the_response_incomplete) {
  const ScriptedServer s(script_of(kThinkThenText));
  const json response = parse(responses(s.server->port(), ask({{"max_output_tokens", 3}})).body);
  EXPECT_EQ(response["status"], "incomplete");
  EXPECT_EQ(response["incomplete_details"], json({{"reason", "max_output_tokens"}}));
  EXPECT_EQ(response["usage"]["output_tokens"], 3);
  const std::vector<NamedEvent> events = named_events(
      responses(s.server->port(), ask({{"max_output_tokens", 3}, {"stream", true}})).body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "response.incomplete");
  EXPECT_EQ(events.back().data["response"]["status"], "incomplete");
}

TEST(ServerResponses, what_needs_stored_state_is_refused_saying_so) {
  const ScriptedServer s(script_of(kThinkThenText));
  const auto expect_error = [&](const json &body, const std::string &param,
                                const std::string &text) {
    const auto r = responses(s.server->port(), body);
    EXPECT_EQ(r.status, 400) << body;
    const json error = parse(r.body)["error"];
    EXPECT_EQ(error["type"], "invalid_request_error");
    EXPECT_EQ(error["param"], param) << r.body;
    EXPECT_NE(error["message"].get<std::string>().find(text), std::string::npos) << r.body;
  };
  expect_error(ask({{"store", true}}), "store", "keeps no responses");
  expect_error(ask({{"previous_response_id", "resp_1"}}), "previous_response_id",
               "keeps no responses");
  expect_error(ask({{"input", {{{"type", "item_reference"}, {"id", "msg_1"}}}}}), "input[0]",
               "stores none");
  expect_error(ask({{"background", true}}), "background", "keeps no responses");
  // store: false is what a stateless server does anyway.
  EXPECT_EQ(responses(s.server->port(), ask({{"store", false}})).status, 200);
}

TEST(ServerResponses, bad_requests_name_the_field) {
  const ScriptedServer s(script_of(kThinkThenText));
  const auto expect_param = [&](const json &body, const std::string &param) {
    const auto r = responses(s.server->port(), body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(parse(r.body)["error"]["param"], param) << r.body;
  };
  json no_input = ask();
  no_input.erase("input");
  expect_param(no_input, "input");
  expect_param(ask({{"max_output_tokens", 0}}), "max_output_tokens");
  expect_param(ask({{"temperature", 3}}), "temperature");
  expect_param(ask({{"tools", {{{"name", "no_type"}}}}}), "tools[0].type");
  expect_param(ask({{"tool_choice", "required"}}), "tool_choice");
  expect_param(
      ask({{"tools", {kWeatherTool}}, {"tool_choice", {{"type", "function"}, {"name", "x"}}}}),
      "tool_choice");
  expect_param(ask({{"text", {{"format", {{"type", "yaml"}}}}}}), "text.format.type");
  expect_param(ask({{"input", {{{"role", "user"}, {"content", {{{"text", "no type"}}}}}}}}),
               "input[0].content[0]");
  expect_param(ask({{"input", {{{"role", "critic"}, {"content", "x"}}}}}), "input[0].role");
  expect_param(ask({{"reasoning", {{"effort", "extreme"}}}}), "reasoning.effort");
  expect_param(ask({{"tools", {{{"type", "namespace"}, {"name", "group"}}}}}), "tools[0].tools");
  // A schema outside the supported subset names the keyword.
  const auto r = responses(
      s.server->port(), ask({{"text",
                              {{"format",
                                {{"type", "json_schema"},
                                 {"name", "n"},
                                 {"schema", {{"type", "string"}, {"not", {{"const", "x"}}}}}}}}}}));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(parse(r.body)["error"]["param"], "text.format.schema") << r.body;
}

// Input items (instructions, a message, an earlier function call with its
// reasoning, its output, a new question) are the chat conversation they
// stand for: the same prompt, so the same greedy reply.
TEST(ServerResponses, input_items_are_the_chat_prompt) {
  const RunningServer server(comparing_options(), 1024, "tiny-q1.gguf", false);
  const json request = {
      {"model", "m"},
      {"max_output_tokens", 8},
      {"temperature", 0},
      {"instructions", "You are terse."},
      {"tools", {kWeatherTool}},
      {"input",
       {{{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "Weather in Paris?"}}}}},
        {{"type", "reasoning"},
         {"id", "rs_1"},
         {"summary", json::array()},
         {"content", {{{"type", "reasoning_text"}, {"text", "I should call the tool."}}}}},
        {{"type", "function_call"},
         {"call_id", "call_1"},
         {"name", "get_weather"},
         {"arguments", "{\"city\": \"Paris\"}"}},
        {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "18C"}},
        {{"role", "user"}, {"content", "And tomorrow?"}}}}};
  const json chat = translated_chat(nullptr, "I should call the tool.");
  const auto a = responses(server.port(), request);
  const auto c = post_with(server.port(), "/v1/chat/completions", chat);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(c.status, 200) << c.body;
  const json response = parse(a.body), completion = parse(c.body);
  EXPECT_EQ(response["usage"]["input_tokens"], completion["usage"]["prompt_tokens"]);
  EXPECT_EQ(response["usage"]["output_tokens"], completion["usage"]["completion_tokens"]);
  EXPECT_EQ(response["output_text"], completion["choices"][0]["message"]["content"]);
}

} // namespace
