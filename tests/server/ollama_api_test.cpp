// Ollama's API end to end (docs/server.md, "Ollama API"): the scripted fake
// plugin makes the model reply a known text, and /api/chat and /api/generate
// must give it in Ollama's NDJSON objects (thinking apart, tool calls with
// object arguments, the counts and durations on the last object); the model
// endpoints describe the one model; options are honoured or refused by name.
// The translation of a chat is checked against Chat Completions on the real
// tiny model.
#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "api_test_support.hpp"
#include "scripted_server.hpp"

namespace {

using namespace server_test;

const json kWeatherTool = {{"type", "function"},
                           {"function",
                            {{"name", "get_weather"},
                             {"description", "Current weather in a city"},
                             {"parameters", kWeatherParameters}}}};

json chat_body(json extra = json::object()) {
  json body = {{"model", "llama3.2"}, {"messages", {{{"role", "user"}, {"content", "Weather?"}}}}};
  body.update(extra);
  return body;
}

void expect_final(const json &last, int eval_count, const char *reason = "stop") {
  EXPECT_EQ(last["done"], true) << last;
  EXPECT_EQ(last["done_reason"], reason) << last;
  EXPECT_EQ(last["model"], "tiny-q1:latest");
  EXPECT_EQ(last["eval_count"], eval_count);
  EXPECT_GT(last["prompt_eval_count"].get<int>(), 0);
  for (const char *duration : {"total_duration", "prompt_eval_duration", "eval_duration"}) {
    EXPECT_TRUE(last[duration].is_number_integer()) << duration;
    EXPECT_GE(last[duration].get<int64_t>(), 0) << duration;
  }
  EXPECT_GE(last["total_duration"].get<int64_t>(),
            last["prompt_eval_duration"].get<int64_t>() + last["eval_duration"].get<int64_t>());
  EXPECT_EQ(last["load_duration"], 0);
}

TEST(ServerOllama, chat_streams_ndjson_by_default_with_thinking_apart) {
  const ScriptedServer s(script_of(kThinkThenText));
  const auto r = post_with(s.server->port(), "/api/chat", chat_body());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.get_header_value("Content-Type"), "application/x-ndjson");
  const std::vector<json> lines = ndjson_lines(r.body);
  ASSERT_GE(lines.size(), 3u);
  std::string thinking, content;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["done"], false);
    EXPECT_EQ(lines[i]["message"]["role"], "assistant");
    // RFC 3339 in UTC with microseconds.
    EXPECT_EQ(lines[i]["created_at"].get<std::string>().size(), 27u) << lines[i];
    thinking += lines[i]["message"].value("thinking", "");
    content += lines[i]["message"]["content"].get<std::string>();
  }
  EXPECT_EQ(content, "It is sunny.");
  EXPECT_NE(thinking.find("I need the weather."), std::string::npos) << thinking;
  expect_final(lines.back(), static_cast<int>(token_count(kThinkThenText)) - 1);
  EXPECT_EQ(lines.back()["message"]["content"], "");

  const auto whole = post_with(s.server->port(), "/api/chat", chat_body({{"stream", false}}));
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json reply = parse(whole.body);
  EXPECT_EQ(reply["message"]["content"], "It is sunny.");
  EXPECT_EQ(reply["message"]["thinking"], "I need the weather.");
  expect_final(reply, static_cast<int>(token_count(kThinkThenText)) - 1);
}

TEST(ServerOllama, think_false_leaves_the_thinking_out) {
  const ScriptedServer s(script_of(kThinkThenText));
  const json reply = parse(
      post_with(s.server->port(), "/api/chat", chat_body({{"stream", false}, {"think", false}}))
          .body);
  EXPECT_EQ(reply["message"]["content"], "It is sunny.");
  EXPECT_FALSE(reply["message"].contains("thinking")) << reply;
}

TEST(ServerOllama, tool_calls_have_object_arguments_whole_and_streamed) {
  const ScriptedServer s(script_of(kToolCall));
  const json expected_call = {
      {"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}, {"index", 0}};
  const json reply = parse(post_with(s.server->port(), "/api/chat",
                                     chat_body({{"tools", {kWeatherTool}}, {"stream", false}}))
                               .body);
  ASSERT_EQ(reply["message"]["tool_calls"].size(), 1u) << reply;
  EXPECT_EQ(reply["message"]["tool_calls"][0]["function"], expected_call);
  EXPECT_EQ(reply["message"]["content"], "");
  EXPECT_EQ(reply["done_reason"], "stop");

  const std::vector<json> lines = ndjson_lines(
      post_with(s.server->port(), "/api/chat", chat_body({{"tools", {kWeatherTool}}})).body);
  json calls = json::array();
  for (const json &line : lines)
    for (const json &call : line["message"].value("tool_calls", json::array()))
      calls.push_back(call["function"]);
  EXPECT_EQ(calls, json::array({expected_call}));
  EXPECT_EQ(lines.back()["done"], true);
}

TEST(ServerOllama, generate_answers_in_response_and_thinking) {
  const ScriptedServer s(script_of(kThinkThenText));
  const json reply = parse(post_with(s.server->port(), "/api/generate",
                                     {{"model", "m"}, {"prompt", "Weather?"}, {"stream", false}})
                               .body);
  EXPECT_EQ(reply["response"], "It is sunny.");
  EXPECT_EQ(reply["thinking"], "I need the weather.");
  expect_final(reply, static_cast<int>(token_count(kThinkThenText)) - 1);
  const std::vector<json> lines = ndjson_lines(
      post_with(s.server->port(), "/api/generate", {{"model", "m"}, {"prompt", "Weather?"}}).body);
  std::string response;
  for (const json &line : lines)
    response += line["response"].get<std::string>();
  EXPECT_EQ(response, "It is sunny.");
}

TEST(ServerOllama, options_set_the_length_the_stop_strings_and_the_context) {
  const ScriptedServer s(script_of("One two STOP three<|im_end|>"));
  const auto chat = [&](const json &options) {
    return post_with(s.server->port(), "/api/chat",
                     chat_body({{"stream", false}, {"think", false}, {"options", options}}));
  };
  json reply = parse(chat({{"num_predict", 2}, {"temperature", 0.5}, {"seed", -7}}).body);
  EXPECT_EQ(reply["done_reason"], "length");
  EXPECT_EQ(reply["eval_count"], 2);
  reply =
      parse(chat({{"stop", {"STOP"}}, {"num_gpu", 99}, {"num_thread", 4}, {"mirostat", 0}}).body);
  EXPECT_EQ(reply["message"]["content"], "One two ");
  EXPECT_EQ(reply["done_reason"], "stop");
  // num_ctx bounds prompt and reply together: P + 2 positions hold the
  // prompt and two tokens fed back, and a third token comes from the last.
  const int prompt = reply["prompt_eval_count"];
  reply = parse(chat({{"num_ctx", prompt + 2}}).body);
  EXPECT_EQ(reply["done_reason"], "length");
  EXPECT_EQ(reply["eval_count"], 3);
  const auto too_small = chat({{"num_ctx", prompt}});
  EXPECT_EQ(too_small.status, 400);
  EXPECT_NE(parse(too_small.body)["error"].get<std::string>().find("leaves no room"),
            std::string::npos)
      << too_small.body;
  // Samplers bonsai lacks are refused unless off; unknown options are
  // ignored and named, as Ollama logs them.
  const auto unknown = chat({{"num_predictt", 5}});
  EXPECT_EQ(unknown.status, 200) << unknown.body;
  EXPECT_EQ(unknown.get_header_value("Bonsai-Ignored-Fields"), "options.num_predictt");
  for (const json &options : {json{{"mirostat", 2}}, json{{"typical_p", 0.5}}}) {
    const auto refused = chat(options);
    EXPECT_EQ(refused.status, 400) << options;
    EXPECT_NE(parse(refused.body)["error"].get<std::string>().find("options."), std::string::npos)
        << refused.body;
  }
}

TEST(ServerOllama, an_empty_conversation_loads_the_model_and_generates_nothing) {
  const ScriptedServer s(script_of(kThinkThenText));
  const json chat =
      parse(post_with(s.server->port(), "/api/chat",
                      {{"model", "m"}, {"messages", json::array()}, {"keep_alive", 0}})
                .body);
  EXPECT_EQ(chat["done"], true);
  EXPECT_EQ(chat["done_reason"], "load");
  EXPECT_EQ(chat["message"]["content"], "");
  const json generate = parse(
      post_with(s.server->port(), "/api/generate", {{"model", "m"}, {"keep_alive", "5m"}}).body);
  EXPECT_EQ(generate["done_reason"], "load");
  EXPECT_EQ(generate["response"], "");
}

TEST(ServerOllama, the_model_endpoints_describe_the_one_model) {
  const RunningServer server;
  httplib::Client client = server.client();
  const json tags = parse(client.Get("/api/tags")->body);
  ASSERT_EQ(tags["models"].size(), 1u) << tags;
  const json &model = tags["models"][0];
  EXPECT_EQ(model["name"], "tiny-q1:latest");
  EXPECT_EQ(model["model"], "tiny-q1:latest");
  EXPECT_EQ(model["size"], std::filesystem::file_size(data_path("tiny-q1.gguf")));
  EXPECT_EQ(model["digest"].get<std::string>().size(), 64u);
  const bonsai::ModelInfo info = open_tiny().model();
  EXPECT_EQ(model["details"]["family"], "qwen3");
  EXPECT_EQ(model["details"]["format"], "gguf");
  EXPECT_EQ(model["details"]["quantization_level"], "Q1_0");
  EXPECT_EQ(model["details"]["parameter_size"],
            fmt::format("{:.2f}M", static_cast<double>(info.n_params) / 1e6));

  const json ps = parse(client.Get("/api/ps")->body);
  ASSERT_EQ(ps["models"].size(), 1u);
  EXPECT_EQ(ps["models"][0]["name"], "tiny-q1:latest");
  EXPECT_EQ(ps["models"][0]["context_length"], 512);
  EXPECT_TRUE(ps["models"][0].contains("expires_at"));

  const json version = parse(client.Get("/api/version")->body);
  EXPECT_TRUE(version["version"].is_string());

  const auto show = post_with(server.port(), "/api/show", {{"model", "anything"}});
  ASSERT_EQ(show.status, 200) << show.body;
  const json details = parse(show.body);
  EXPECT_EQ(details["details"], model["details"]);
  EXPECT_EQ(details["model_info"]["general.architecture"], "qwen3");
  EXPECT_EQ(details["model_info"]["general.parameter_count"], info.n_params);
  EXPECT_EQ(details["model_info"]["qwen3.context_length"], 512);
  EXPECT_EQ(details["model_info"]["qwen3.block_count"], info.n_layer);
  EXPECT_EQ(details["capabilities"], json({"completion", "tools", "thinking"}));
  const auto misspelt = post_with(server.port(), "/api/show", {{"modell", "x"}});
  EXPECT_EQ(misspelt.status, 200) << misspelt.body;
  EXPECT_EQ(misspelt.get_header_value("Bonsai-Ignored-Fields"), "modell");
}

TEST(ServerOllama, errors_are_ollamas_shape_and_name_the_field) {
  const RunningServer server;
  const auto expect_error = [&](const std::string &path, const json &body,
                                const std::string &text) {
    const auto r = post_with(server.port(), path, body);
    EXPECT_EQ(r.status, 400) << body;
    const json error = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(error.is_object() && error["error"].is_string()) << r.body;
    EXPECT_NE(error["error"].get<std::string>().find(text), std::string::npos) << r.body;
  };
  expect_error("/api/chat", chat_body({{"format", "yaml"}}), "'format' must be");
  expect_error("/api/chat", chat_body({{"think", "very"}}), "'think' must be");
  expect_error(
      "/api/chat",
      chat_body({{"messages", {{{"role", "user"}, {"content", "x"}, {"images", "AAAA"}}}}}),
      "'messages[0].images' must be a list");
  expect_error("/api/chat",
               chat_body({{"messages",
                           {{{"role", "user"}, {"content", "x"}},
                            {{"role", "assistant"}, {"content", "The answer is"}}}}}),
               "does not continue an assistant message");
  expect_error("/api/generate", {{"model", "m"}, {"prompt", "x"}, {"suffix", "y"}}, "'suffix'");
  expect_error("/api/generate", {{"model", "m"}, {"prompt", "x"}, {"context", {1, 2}}},
               "'context'");
  expect_error("/api/generate", {{"model", "m"}, {"prompt", "x"}, {"keep_alive", true}},
               "'keep_alive'");
  // Unknown paths of Ollama's API answer in its shape too.
  const auto pull = post_with(server.port(), "/api/pull", {{"model", "x"}});
  EXPECT_EQ(pull.status, 404);
  EXPECT_EQ(parse(pull.body), json({{"error", "No endpoint POST /api/pull"}}));
}

// A conversation (system, user, an assistant turn with a tool call, the
// tool's result, a question) is the Chat Completions prompt: the same greedy
// reply, streamed or not.
TEST(ServerOllama, a_chat_is_the_chat_completions_prompt) {
  const RunningServer server(comparing_options(), 1024, "tiny-q1.gguf", false);
  const json messages = {
      {{"role", "system"}, {"content", "You are terse."}},
      {{"role", "user"}, {"content", "Weather in Paris?"}},
      {{"role", "assistant"},
       {"content", ""},
       {"tool_calls",
        {{{"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}}}},
      {{"role", "tool"}, {"content", "18C"}, {"tool_name", "get_weather"}},
      {{"role", "user"}, {"content", "And tomorrow?"}}};
  const json ollama = {{"model", "m"},
                       {"messages", messages},
                       {"tools", {kWeatherTool}},
                       {"stream", false},
                       {"options", {{"temperature", 0}, {"num_predict", 8}}}};
  const json chat = translated_chat("", "");
  const auto o = post_with(server.port(), "/api/chat", ollama);
  const auto c = post_with(server.port(), "/v1/chat/completions", chat);
  ASSERT_EQ(o.status, 200) << o.body;
  ASSERT_EQ(c.status, 200) << c.body;
  const json reply = parse(o.body), completion = parse(c.body);
  EXPECT_EQ(reply["prompt_eval_count"], completion["usage"]["prompt_tokens"]);
  EXPECT_EQ(reply["eval_count"], completion["usage"]["completion_tokens"]);
  EXPECT_EQ(reply["message"]["content"], completion["choices"][0]["message"]["content"]);
  json streamed = ollama;
  streamed["stream"] = true;
  std::string text;
  for (const json &line : ndjson_lines(post_with(server.port(), "/api/chat", streamed).body))
    text += line["message"]["content"].get<std::string>();
  EXPECT_EQ(text, reply["message"]["content"]);
}

} // namespace
