// Constrained decoding through the server (docs/structured-output.md), on a
// model where it is hardest: random weights over the real Qwen3 vocabulary
// (151,936 rows), whose unconstrained replies are never JSON. Every reply
// must still parse and meet the schema, checked here field by field by
// hand; the npm suite (structured.test.mjs) checks the same replies with a
// JSON Schema validator.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "server_test_support.hpp"

namespace {

using namespace server_test;

const json kPersonSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 20},
    "age": {"type": "integer"},
    "mood": {"enum": ["happy", "sad", "calm"]},
    "pets": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    "home": {"anyOf": [{"type": "null"},
                       {"type": "object", "properties": {"zip": {"type": "string",
                        "pattern": "^[0-9]{5}$"}}, "required": ["zip"],
                        "additionalProperties": false}]}
  },
  "required": ["name", "age", "mood", "pets", "home"],
  "additionalProperties": false
})");

const json kWeatherTool = json::parse(R"({"type": "function", "function": {
  "name": "get_weather", "description": "Weather in a city",
  "parameters": {"type": "object", "properties": {
    "city": {"type": "string", "minLength": 1, "maxLength": 12},
    "unit": {"enum": ["celsius", "fahrenheit"]}},
  "required": ["city", "unit"], "additionalProperties": false}}})");

const json kTimeTool = json::parse(R"({"type": "function", "function": {
  "name": "get_time", "parameters": {"type": "object", "properties": {
    "zone": {"type": "string"}}, "required": ["zone"], "additionalProperties": false}}})");

// Hand-written check of kPersonSchema.
void expect_person(const json &v) {
  ASSERT_TRUE(v.is_object()) << v;
  EXPECT_EQ(v.size(), 5u) << v;
  ASSERT_TRUE(v["name"].is_string()) << v;
  EXPECT_TRUE(v["age"].is_number_integer()) << v;
  EXPECT_TRUE(v["mood"] == "happy" || v["mood"] == "sad" || v["mood"] == "calm") << v;
  ASSERT_TRUE(v["pets"].is_array()) << v;
  EXPECT_GE(v["pets"].size(), 1u);
  EXPECT_LE(v["pets"].size(), 3u);
  for (const auto &pet : v["pets"])
    EXPECT_TRUE(pet.is_string()) << v;
  const json &home = v["home"];
  if (!home.is_null()) {
    ASSERT_TRUE(home.is_object()) << v;
    const std::string zip = home.at("zip").get<std::string>();
    EXPECT_EQ(zip.size(), 5u) << v;
    EXPECT_EQ(zip.find_first_not_of("0123456789"), std::string::npos) << v;
  }
}

class StructuredOutput : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    model_ = new std::string((std::filesystem::temp_directory_path() /
                              ("bonsai-structured-" + std::to_string(getpid()) + ".gguf"))
                                 .string());
    const std::string command = std::string(BONSAI_BIN_DIR) + "/bonsai-gguf make-model --vocab " +
                                data_path("qwen3-vocab.gguf") + " --preset tiny --seed 11 -o " +
                                *model_ + " > /dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    server_ = new RunningServerAt(*model_);
  }
  static void TearDownTestSuite() {
    delete server_;
    std::filesystem::remove(*model_);
    delete model_;
  }

  struct RunningServerAt {
    explicit RunningServerAt(const std::string &path)
        : server(std::make_unique<bonsai::server::Server>(server_options(2), [path] {
            bonsai::EngineOptions options = engine_options(1024);
            options.plugin_options = "";
            return bonsai::Engine::open(path, options);
          })) {
      server->wait_loaded();
      EXPECT_TRUE(server->ready()) << server->load_error();
    }
    std::unique_ptr<bonsai::server::Server> server;
  };

  static httplib::Response chat(json body) {
    if (!body.contains("messages"))
      body["messages"] = {{{"role", "user"}, {"content", "Tell me about someone."}}};
    return post_json(server_->server->port(), "/v1/chat/completions", body);
  }

  static json schema_format(const json &schema) {
    return {{"type", "json_schema"},
            {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", schema}}}};
  }

  static inline std::string *model_ = nullptr;
  static inline RunningServerAt *server_ = nullptr;
};

TEST_F(StructuredOutput, RandomWeightsStillReplyWithValidJson) {
  for (int seed = 1; seed <= 12; ++seed) {
    const auto r = chat({{"seed", seed},
                         {"temperature", 1.0},
                         {"max_tokens", 120},
                         {"enable_thinking", seed % 2 == 0},
                         {"response_format", schema_format(kPersonSchema)}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json choice = parse(r.body)["choices"][0];
    SCOPED_TRACE(choice.dump());
    EXPECT_EQ(choice["finish_reason"], "stop");
    expect_person(json::parse(choice["message"]["content"].get<std::string>()));
  }
}

TEST_F(StructuredOutput, AShortBudgetStillEndsInCompleteJson) {
  // The shortest reply is 64 bytes; 80 tokens leave little room to wander.
  const auto r = chat({{"seed", 5},
                       {"temperature", 1.0},
                       {"max_tokens", 80},
                       {"enable_thinking", false},
                       {"response_format", schema_format(kPersonSchema)}});
  ASSERT_EQ(r.status, 200) << r.body;
  expect_person(json::parse(parse(r.body)["choices"][0]["message"]["content"].get<std::string>()));
}

TEST_F(StructuredOutput, JsonObjectMode) {
  for (int seed = 1; seed <= 4; ++seed) {
    const auto r = chat({{"seed", seed},
                         {"max_tokens", 60},
                         {"temperature", 1.0},
                         {"response_format", {{"type", "json_object"}}}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json content =
        json::parse(parse(r.body)["choices"][0]["message"]["content"].get<std::string>());
    EXPECT_TRUE(content.is_object()) << content;
  }
}

TEST_F(StructuredOutput, StreamedReplyAddsUpToValidJson) {
  json body = {{"seed", 3},
               {"temperature", 1.0},
               {"max_tokens", 100},
               {"stream", true},
               {"enable_thinking", false},
               {"messages", {{{"role", "user"}, {"content", "x"}}}},
               {"response_format", schema_format(kPersonSchema)}};
  httplib::Client client("127.0.0.1", server_->server->port());
  auto result = client.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(result);
  std::string content;
  for (const std::string &event : sse_data(result->body)) {
    if (event == "[DONE]")
      continue;
    const json delta = parse(event)["choices"][0]["delta"];
    if (delta.contains("content") && delta["content"].is_string())
      content += delta["content"].get<std::string>();
  }
  expect_person(json::parse(content));
}

TEST_F(StructuredOutput, RequiredToolChoiceAlwaysCallsATool) {
  for (int seed = 1; seed <= 8; ++seed) {
    const auto r = chat({{"seed", seed},
                         {"temperature", 1.0},
                         {"max_tokens", 120},
                         {"tools", {kWeatherTool, kTimeTool}},
                         {"tool_choice", "required"},
                         {"parallel_tool_calls", false}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json choice = parse(r.body)["choices"][0];
    SCOPED_TRACE(choice.dump());
    EXPECT_EQ(choice["finish_reason"], "tool_calls");
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
    const json function = choice["message"]["tool_calls"][0]["function"];
    const json args = json::parse(function["arguments"].get<std::string>());
    if (function["name"] == "get_weather") {
      EXPECT_EQ(args.size(), 2u);
      const auto city = args.at("city").get<std::string>();
      EXPECT_GE(city.size(), 1u);
      EXPECT_TRUE(args["unit"] == "celsius" || args["unit"] == "fahrenheit");
    } else {
      EXPECT_EQ(function["name"], "get_time");
      EXPECT_TRUE(args.at("zone").is_string());
    }
  }
}

TEST_F(StructuredOutput, NamedToolChoiceCallsThatTool) {
  for (int seed = 1; seed <= 3; ++seed) {
    const auto r =
        chat({{"seed", seed},
              {"temperature", 1.0},
              {"max_tokens", 100},
              {"tools", {kWeatherTool, kTimeTool}},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}});
    ASSERT_EQ(r.status, 200) << r.body;
    const json calls = parse(r.body)["choices"][0]["message"]["tool_calls"];
    ASSERT_GE(calls.size(), 1u) << r.body;
    for (const auto &call : calls)
      EXPECT_EQ(call["function"]["name"], "get_time");
  }
}

TEST_F(StructuredOutput, RefusalsNameTheFieldAndTheKeyword) {
  struct Case {
    json body;
    std::string param, message;
  };
  const Case cases[] = {
      {{{"response_format", schema_format({{"type", "string"}, {"not", {{"format", "email"}}}})}},
       "response_format.json_schema.schema",
       "json_schema: the keyword 'not' is not supported (at #)"},
      {{{"response_format", schema_format({{"$ref", "#"}})}},
       "response_format.json_schema.schema",
       "recursive"},
      {{{"response_format", {{"type", "yaml"}}}}, "response_format.type", "\"yaml\" is not known"},
      {{{"response_format", {{"type", "json_schema"}}}},
       "response_format.json_schema",
       "must be an object"},
      {{{"tools", {kTimeTool}},
        {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}},
       "tool_choice",
       "'nope', which is not in 'tools'"},
      {{{"tool_choice", "required"}}, "tool_choice", "needs 'tools'"},
      {{{"response_format", {{"type", "json_object"}}}, {"stop", {"}"}}},
       "stop",
       "'stop' cannot be used with 'response_format'"},
      {{{"tools", {kTimeTool}}, {"tool_choice", "required"}, {"stop", "<tool_call>"}},
       "stop",
       "'stop' cannot be used with a required tool call"},
      {{{"tools",
         {{{"type", "function"},
           {"function", {{"name", "count"}, {"parameters", {{"type", "integer"}}}}}}}},
        {"tool_choice", "required"}},
       "tools",
       "tool 'count' parameters: arguments are a JSON object, but 'type' is \"integer\""},
  };
  for (const Case &c : cases) {
    const auto r = chat(c.body);
    ASSERT_EQ(r.status, 400) << c.body << r.body;
    const json error = parse(r.body)["error"];
    EXPECT_EQ(error["param"], c.param) << r.body;
    EXPECT_NE(error["message"].get<std::string>().find(c.message), std::string::npos) << r.body;
  }
}

TEST_F(StructuredOutput, MetricsCountConstrainedTokens) {
  ASSERT_EQ(chat({{"max_tokens", 30}, {"response_format", {{"type", "json_object"}}}}).status, 200);
  httplib::Client client("127.0.0.1", server_->server->port());
  const auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  const std::string &text = metrics->body;
  const size_t at = text.find("\nbonsai_constrained_tokens_total ");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_GT(std::stoll(text.substr(at + 33)), 0);
  EXPECT_NE(text.find("\nbonsai_constraint_seconds_total "), std::string::npos);
}

} // namespace
