// The bad-input catalogue of the HTTP API: every case gets a 4xx with an
// OpenAI-style error body naming the problem, and the server keeps serving
// the next client.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server_test_support.hpp"

namespace {

using namespace server_test;
using ::testing::HasSubstr;

struct BadRequest {
  const char *name;
  const char *path;
  std::string body;
  int status;
  const char *message; // a part of the error message
};

// A completion asking for JSON under `schema` (JSON text).
std::string schema_request(const std::string &schema) {
  return R"({"prompt": "hi", "response_format": {"type": "json_schema", "json_schema": )"
         R"({"name": "x", "schema": )" +
         schema + "}}}";
}

std::string nested_arrays(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i)
    s += R"({"type": "array", "items": )";
  s += "true";
  for (int i = 0; i < depth; ++i)
    s += "}";
  return s;
}

std::string big_enum(int values) {
  std::string s = R"({"enum": [0)";
  for (int i = 1; i < values; ++i)
    s.append(",").append(std::to_string(i));
  return s + "]}";
}

const BadRequest kCatalogue[] = {
    {"malformed_json", "/v1/chat/completions", R"({"messages": [)", 400, "not valid JSON"},
    {"number_past_double", "/v1/completions", R"({"prompt": "hi", "top_p": 1e999})", 400,
     "not valid JSON"},
    {"not_an_object", "/v1/completions", R"([1, 2])", 400, "must be a JSON object"},
    {"empty_body", "/v1/completions", "", 400, "not valid JSON"},
    {"messages_missing", "/v1/chat/completions", R"({"max_tokens": 3})", 400,
     "'messages' is required"},
    {"messages_empty", "/v1/chat/completions", R"({"messages": []})", 400, "non-empty list"},
    {"role_unknown", "/v1/chat/completions",
     R"({"messages": [{"role": "wizard", "content": "hi"}]})", 400, "role"},
    {"content_wrong_type", "/v1/chat/completions",
     R"({"messages": [{"role": "user", "content": 5}]})", 400, "content"},
    {"part_without_type", "/v1/chat/completions",
     R"({"messages": [{"role": "user", "content": [{"image_url": {}}]}]})", 400, "must be a part"},
    {"max_tokens_string", "/v1/chat/completions",
     R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": "8"})", 400,
     "'max_tokens' must be an integer"},
    {"max_tokens_negative", "/v1/completions", R"({"prompt": "hi", "max_tokens": -5})", 400,
     "'max_tokens' must be between"},
    {"max_tokens_zero", "/v1/completions", R"({"prompt": "hi", "max_tokens": 0})", 400,
     "'max_tokens' must be between"},
    {"max_completion_tokens_zero", "/v1/chat/completions",
     R"({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 0})", 400,
     "'max_completion_tokens' must be between"},
    {"temperature_out_of_range", "/v1/completions", R"({"prompt": "hi", "temperature": 7})", 400,
     "'temperature' must be between"},
    {"top_p_bool", "/v1/completions", R"({"prompt": "hi", "top_p": true})", 400,
     "'top_p' must be a number"},
    {"stop_wrong_type", "/v1/completions", R"({"prompt": "hi", "stop": 3})", 400, "'stop'"},
    {"stop_empty_string", "/v1/completions", R"({"prompt": "hi", "stop": [""]})", 400,
     "empty string"},
    {"stream_not_bool", "/v1/completions", R"({"prompt": "hi", "stream": "yes"})", 400,
     "'stream' must be a boolean"},
    {"stream_options_without_stream", "/v1/completions",
     R"({"prompt": "hi", "stream_options": {"include_usage": true}})", 400, "stream_options"},
    {"logit_bias_refused", "/v1/completions", R"({"prompt": "hi", "logit_bias": {"5": 1}})", 400,
     "'logit_bias' is not supported"},
    {"n_too_many", "/v1/completions", R"({"prompt": "hi", "n": 17})", 400, "'n' must be between"},
    {"tool_choice_required", "/v1/chat/completions",
     R"({"messages": [{"role": "user", "content": "hi"}], "tools": [], "tool_choice": "required"})",
     400, "'tool_choice' \"required\" needs 'tools'"},
    {"response_format_unsupported_keyword", "/v1/chat/completions",
     R"({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema",
        "json_schema": {"name": "x", "schema": {"type": "integer", "not": {"const": 0}}}}})",
     400, "the keyword 'not' is not supported"},
    {"response_format_bad_pattern", "/v1/completions",
     R"({"prompt": "hi", "response_format": {"type": "json_schema", "json_schema": {"name": "x",
        "schema": {"type": "string", "pattern": "(a)\\1"}}}})",
     400, "back-references are not supported"},
    {"schema_nested_too_deep", "/v1/completions", schema_request(nested_arrays(40)), 400,
     "the schema nests deeper than 32 levels"},
    {"schema_huge_enum", "/v1/completions", schema_request(big_enum(3000)), 400,
     "'enum' holds 3000 values (at most 1024)"},
    {"schema_pattern_automaton_too_large", "/v1/completions",
     schema_request(R"({"type": "string", "pattern": "(a{1000}){1000}"})"), 400,
     "automaton states"},
    {"schema_left_recursive_ref", "/v1/completions",
     schema_request(R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})"), 400,
     "the recursive '$ref' \"#\" comes back to itself before an object or array opens"},
    {"tool_schema_unsupported_keyword", "/v1/chat/completions",
     R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer", "if": {"minimum": 0}}}}}}]})",
     400, "tool 'f' parameters: json_schema: the keyword 'if' is not supported"},
    {"tools_not_a_list", "/v1/chat/completions",
     R"({"messages": [{"role": "user", "content": "hi"}], "tools": {}})", 400,
     "'tools' must be a list"},
    {"prompt_missing", "/v1/completions", R"({"max_tokens": 3})", 400, "'prompt' is required"},
    {"prompt_token_out_of_range", "/v1/completions", R"({"prompt": [1, 99999]})", 400,
     "outside the vocabulary"},
    {"invalid_utf8", "/v1/completions", "{\"prompt\": \"caf\xC3\x28\"}", 400, "not valid JSON"},
    {"prompt_too_long", "/v1/completions",
     json({{"prompt", std::vector<int>(600, 5)}, {"max_tokens", 4}}).dump(), 400, "context window"},
};

class ServerBadInput : public ::testing::Test {
protected:
  static void SetUpTestSuite() { server_ = new RunningServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static RunningServer *server_;

  // The next client is still served.
  void expect_still_serving() {
    httplib::Client client = server_->client();
    auto health = client.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
  }
};
RunningServer *ServerBadInput::server_ = nullptr;

TEST_F(ServerBadInput, every_catalogue_entry_gets_its_status_and_an_openai_error) {
  for (const BadRequest &bad : kCatalogue) {
    SCOPED_TRACE(bad.name);
    const auto response = post(*server_, bad.path, bad.body);
    EXPECT_EQ(response.status, bad.status) << response.body;
    const json error = json::parse(response.body, nullptr, false);
    ASSERT_TRUE(error.is_object()) << response.body;
    EXPECT_THAT(error["error"]["message"].get<std::string>(), HasSubstr(bad.message));
    EXPECT_TRUE(error["error"]["type"].is_string());
    expect_still_serving();
  }
}

TEST_F(ServerBadInput, unknown_paths_and_methods_get_json_errors) {
  httplib::Client client = server_->client();
  auto missing = client.Get("/v2/anything");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_THAT(json::parse(missing->body)["error"]["message"].get<std::string>(),
              HasSubstr("No endpoint"));
  auto wrong_method = client.Get("/v1/chat/completions");
  ASSERT_TRUE(wrong_method);
  EXPECT_GE(wrong_method->status, 400);
  EXPECT_LT(wrong_method->status, 500);
  EXPECT_TRUE(json::parse(wrong_method->body, nullptr, false).is_object());
}

TEST_F(ServerBadInput, a_body_past_the_limit_gets_413) {
  const std::string body = R"({"prompt": ")" + std::string(2 << 20, 'a') + R"("})";
  const auto response = post(*server_, "/v1/completions", body);
  // The server may answer before reading everything and close the socket,
  // which a client can see as a failed send.
  if (response.status != -1) {
    EXPECT_EQ(response.status, 413);
  }
  expect_still_serving();
}

TEST_F(ServerBadInput, too_many_headers_get_431) {
  httplib::Headers headers;
  for (int i = 0; i < 150; ++i)
    headers.emplace("X-Filler-" + std::to_string(i), "v");
  const auto response = post(*server_, "/v1/completions", R"({"prompt": "hi"})", headers);
  EXPECT_EQ(response.status, 431);
  expect_still_serving();
}

TEST_F(ServerBadInput, a_truncated_body_is_dropped_and_the_server_stays_up) {
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                              R"({"prompt": "h)";
  const std::string reply =
      raw_exchange(server_->port(), request, true, std::chrono::milliseconds(5000));
  // Either no answer or a 4xx: never a completion.
  EXPECT_EQ(reply.find(" 200 "), std::string::npos) << reply;
  expect_still_serving();
}

TEST_F(ServerBadInput, garbage_instead_of_http_is_refused) {
  const std::string reply = raw_exchange(
      server_->port(), std::string("\x16\x03\x01\x02\x00", 5) + "not http at all\r\n\r\n", true,
      std::chrono::milliseconds(5000));
  EXPECT_EQ(reply.find(" 200 "), std::string::npos) << reply;
  expect_still_serving();
}

TEST(ServerAuth, v1_needs_the_bearer_key_and_health_does_not) {
  bonsai::server::ServerOptions options = server_options();
  options.api_keys = {"s3cret"};
  const RunningServer server(options);
  const std::string body = R"({"prompt": "hi", "max_tokens": 2})";
  for (const httplib::Headers &headers :
       {httplib::Headers{}, httplib::Headers{{"Authorization", "Bearer wrong"}},
        httplib::Headers{{"Authorization", "s3cret"}}}) {
    const auto response = post(server, "/v1/completions", body, headers);
    EXPECT_EQ(response.status, 401);
    EXPECT_EQ(json::parse(response.body)["error"]["type"], "authentication_error");
  }
  EXPECT_EQ(post(server, "/v1/completions", body, {{"Authorization", "Bearer s3cret"}}).status,
            200);
  httplib::Client client = server.client();
  EXPECT_EQ(client.Get("/health")->status, 200);
  EXPECT_EQ(client.Get("/v1/models")->status, 401);
}

TEST(ServerOptionsCheck, out_of_range_options_and_a_taken_port_are_refused) {
  auto loader = [] { return open_tiny(); };
  bonsai::server::ServerOptions bad = server_options();
  bad.parallel = 0;
  EXPECT_THROW(bonsai::server::Server(bad, loader), bonsai::server::ServerError);
  bad = server_options();
  bad.port = 70000;
  EXPECT_THROW(bonsai::server::Server(bad, loader), bonsai::server::ServerError);
  const RunningServer first;
  bonsai::server::ServerOptions same_port = server_options();
  same_port.port = first.port();
  EXPECT_THROW(bonsai::server::Server(same_port, loader), bonsai::server::ServerError);
}

} // namespace
