// The Responses, Messages and Ollama endpoints against what an attacker
// sends, over real sockets: each goes through the same checks as Chat
// Completions (the key, Host and Origin, the media type, the body and JSON
// limits), answers in its own API's error shape, and a client that cuts its
// stream off frees the slot at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api_test_support.hpp"

namespace {

using namespace server_test;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

struct NewRoute {
  const char *method;
  const char *path;
  json body; // a valid request (POST)
};

const std::vector<NewRoute> &new_routes() {
  static const std::vector<NewRoute> routes = {
      {"POST", "/v1/responses", {{"input", "hi"}, {"max_output_tokens", 2}}},
      {"POST",
       "/v1/messages",
       {{"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}},
      {"POST",
       "/v1/messages/count_tokens",
       {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}},
      {"POST",
       "/api/chat",
       {{"stream", false},
        {"messages", {{{"role", "user"}, {"content", "hi"}}}},
        {"options", {{"num_predict", 2}}}}},
      {"POST",
       "/api/generate",
       {{"stream", false}, {"prompt", "hi"}, {"options", {{"num_predict", 2}}}}},
      {"POST", "/api/show", {{"model", "x"}}},
      {"GET", "/api/tags", nullptr},
      {"GET", "/api/ps", nullptr},
      {"GET", "/api/version", nullptr},
  };
  return routes;
}

std::string request_for(int port, const NewRoute &route, const std::string &headers = {}) {
  return std::string(route.method) == "GET"
             ? get_request(port, route.path, headers)
             : post_request(port, route.path, route.body.dump(), headers);
}

// The message of an error body in any of the three shapes.
std::string error_text(const std::string &path, const std::string &body) {
  const json error = json::parse(body, nullptr, false);
  if (!error.is_object())
    return "(not JSON) " + body;
  if (path.rfind("/api/", 0) == 0)
    return error.value("error", "(no error string)");
  if (path.rfind("/v1/messages", 0) == 0) {
    EXPECT_EQ(error["type"], "error") << body;
    return error["error"].value("message", "");
  }
  return error["error"].value("message", "");
}

TEST(ServerApiHardening, every_new_route_needs_the_key_and_takes_it_either_way) {
  bonsai::server::ServerOptions options = server_options();
  options.api_keys = {"k1"};
  const RunningServer server(options, 512, "tiny-q1.gguf", false);
  for (const NewRoute &route : new_routes()) {
    SCOPED_TRACE(route.path);
    const auto none = raw_request(server.port(), request_for(server.port(), route));
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 401);
    EXPECT_THAT(error_text(route.path, none->body), HasSubstr("API key"));
    const auto wrong =
        raw_request(server.port(), request_for(server.port(), route, "x-api-key: k2\r\n"));
    EXPECT_EQ(wrong->status, 401);
    for (const char *header : {"Authorization: Bearer k1\r\n", "x-api-key: k1\r\n"}) {
      const auto ok = raw_request(server.port(), request_for(server.port(), route, header), 60s);
      ASSERT_TRUE(ok);
      EXPECT_EQ(ok->status, 200) << header << ok->body;
    }
  }
  // Two keys in one request: which one counts would be ambiguous.
  const auto twice = raw_request(server.port(), request_for(server.port(), new_routes()[1],
                                                            "x-api-key: k1\r\nx-api-key: k2\r\n"));
  EXPECT_EQ(twice->status, 400);
}

TEST(ServerApiHardening, every_new_route_checks_host_origin_and_media_type) {
  const RunningServer server;
  for (const NewRoute &route : new_routes()) {
    SCOPED_TRACE(route.path);
    std::string foreign_host = request_for(server.port(), route);
    foreign_host.replace(foreign_host.find("Host: 127.0.0.1"), 15, "Host: evil.example");
    const auto host = raw_request(server.port(), foreign_host);
    ASSERT_TRUE(host);
    EXPECT_EQ(host->status, 403);
    EXPECT_THAT(error_text(route.path, host->body), HasSubstr("evil.example"));
    const auto origin = raw_request(
        server.port(), request_for(server.port(), route, "Origin: http://evil.example\r\n"));
    EXPECT_EQ(origin->status, 403);
    if (std::string(route.method) == "POST") {
      const auto form =
          raw_request(server.port(), post_request(server.port(), route.path, route.body.dump(), "",
                                                  "application/x-www-form-urlencoded"));
      EXPECT_EQ(form->status, 415);
      EXPECT_THAT(error_text(route.path, form->body), HasSubstr("application/json"));
    } else {
      const auto post = raw_request(server.port(), post_request(server.port(), route.path, "{}"));
      EXPECT_EQ(post->status, 405);
    }
  }
}

TEST(ServerApiHardening, bodies_past_the_limits_malformed_or_deep_are_refused_in_each_shape) {
  bonsai::server::ServerOptions options = server_options();
  options.max_body_bytes = 64 * 1024;
  const RunningServer server(options);
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  for (const NewRoute &route : new_routes()) {
    if (std::string(route.method) != "POST")
      continue;
    SCOPED_TRACE(route.path);
    // A declared length past the limit: refused before any body byte.
    const std::string big = "{\"x\": \"" + std::string(70 * 1024, 'a') + "\"}";
    const auto large = raw_request(server.port(), post_request(server.port(), route.path, big));
    ASSERT_TRUE(large);
    EXPECT_EQ(large->status, 413);
    EXPECT_THAT(error_text(route.path, large->body), HasSubstr("larger than"));
    const auto broken =
        raw_request(server.port(), post_request(server.port(), route.path, "{\"messages\": [}"));
    EXPECT_EQ(broken->status, 400);
    EXPECT_FALSE(error_text(route.path, broken->body).empty());
    json nested = route.body;
    nested["metadata"] = json::parse(deep);
    std::string text = nested.dump();
    const auto depth = raw_request(server.port(), post_request(server.port(), route.path, text));
    EXPECT_EQ(depth->status, 400);
    EXPECT_THAT(error_text(route.path, depth->body), HasSubstr("deeper than 64 levels"));
    const auto not_object =
        raw_request(server.port(), post_request(server.port(), route.path, "[1]"));
    EXPECT_EQ(not_object->status, 400);
    EXPECT_THAT(error_text(route.path, not_object->body), HasSubstr("JSON object"));
  }
  // Anthropic's shape names the error type for the status.
  const auto large = raw_request(
      server.port(), post_request(server.port(), "/v1/messages", std::string(70 * 1024, ' ')));
  EXPECT_EQ(json::parse(large->body)["error"]["type"], "request_too_large");
  EXPECT_EQ(raw_request(server.port(), get_request(server.port(), "/health"))->status, 200);
}

TEST(ServerApiHardening, oversized_fields_and_prompts_are_refused_before_tokenizing) {
  bonsai::server::ServerOptions options = server_options();
  options.max_prompt_bytes = 1000;
  const RunningServer server(options);
  const std::string long_text(2000, 'a');
  const std::vector<std::pair<std::string, json>> requests = {
      {"/v1/responses", {{"input", long_text}}},
      {"/v1/messages",
       {{"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", long_text}}}}}},
      {"/v1/messages/count_tokens", {{"messages", {{{"role", "user"}, {"content", long_text}}}}}},
      {"/api/chat", {{"messages", {{{"role", "user"}, {"content", long_text}}}}}},
      {"/api/generate", {{"prompt", long_text}}}};
  for (const auto &[path, body] : requests) {
    const auto r = post_with(server.port(), path, body);
    EXPECT_EQ(r.status, 400) << path;
    EXPECT_THAT(error_text(path, r.body), HasSubstr("this server takes at most 1000")) << path;
  }
  // Stop strings are held to their limits in every API's spelling.
  const json many = std::vector<std::string>(17, "x");
  EXPECT_EQ(post_with(server.port(), "/v1/messages",
                      {{"max_tokens", 2},
                       {"stop_sequences", many},
                       {"messages", {{{"role", "user"}, {"content", "a"}}}}})
                .status,
            400);
  EXPECT_EQ(post_with(server.port(), "/api/chat",
                      {{"options", {{"stop", many}}},
                       {"messages", {{{"role", "user"}, {"content", "a"}}}}})
                .status,
            400);
  const json tools = std::vector<json>(129, {{"name", "t"}, {"input_schema", json::object()}});
  EXPECT_EQ(post_with(server.port(), "/v1/messages",
                      {{"max_tokens", 2},
                       {"tools", tools},
                       {"messages", {{{"role", "user"}, {"content", "a"}}}}})
                .status,
            400);
}

// Tenants are keys, whichever header carries them and whichever API is
// called: a prompt one key sent shares no cached prefix with another key's
// request, and shares it with the same key's request on another API.
TEST(ServerApiHardening, tenants_are_keys_whatever_the_header_and_the_api) {
  bonsai::server::ServerOptions options = server_options(4);
  options.api_keys = {"alice", "bob"};
  const RunningServer server(options, 512, "tiny-q1.gguf", false);
  const std::string secret = "The vault code is 4 7 1 1 and nobody may know it. Say ok.";
  const json messages = {{"max_tokens", 1},
                         {"messages", {{{"role", "user"}, {"content", secret}}}}};
  const auto cached = [](const httplib::Response &r) {
    const json body = json::parse(r.body);
    EXPECT_EQ(r.status, 200) << r.body;
    return body.contains("usage") && body["usage"].contains("cache_read_input_tokens")
               ? body["usage"]["cache_read_input_tokens"].get<int>()
               : body["usage"]["input_tokens_details"]["cached_tokens"].get<int>();
  };
  cached(post_with(server.port(), "/v1/messages", messages, {{"x-api-key", "alice"}}));
  EXPECT_EQ(cached(post_with(
                server.port(), "/v1/responses",
                {{"input", {{{"role", "user"}, {"content", secret}}}}, {"max_output_tokens", 1}},
                {{"Authorization", "Bearer bob"}})),
            0);
  // Each key's prefix is its own on either API and either header.
  EXPECT_GT(cached(post_with(server.port(), "/v1/messages", messages, {{"x-api-key", "bob"}})), 0);
  EXPECT_GT(cached(post_with(server.port(), "/v1/messages", messages,
                             {{"Authorization", "Bearer alice"}})),
            0);
}

// A client that goes away in the middle of a stream frees its slot at once,
// whichever API it streams.
TEST(ServerApiHardening, a_stream_cut_off_by_the_client_frees_its_slot) {
  const RunningServer server(server_options(1), 4096, "tiny-q1.gguf", false);
  const std::vector<std::pair<std::string, json>> streams = {
      {"/v1/responses", {{"input", "Go on"}, {"max_output_tokens", 3000}, {"stream", true}}},
      {"/v1/messages",
       {{"max_tokens", 3000},
        {"stream", true},
        {"messages", {{{"role", "user"}, {"content", "Go on"}}}}}},
      {"/api/chat",
       {{"messages", {{{"role", "user"}, {"content", "Go on"}}}},
        {"options", {{"num_predict", 3000}}}}},
      {"/api/generate", {{"prompt", "Go on"}, {"options", {{"num_predict", 3000}}}}}};
  double generated = 0;
  for (const auto &[path, body] : streams) {
    SCOPED_TRACE(path);
    const Streamed cut = post_stream(server, path, body.dump(), 600);
    EXPECT_TRUE(cut.status == 200 || cut.status == -1) << cut.status;
    ASSERT_TRUE(
        eventually([&] { return metric(metrics_page(server), "bonsai_slots_busy") == 0; }, 10s));
    const double now = metric(metrics_page(server), "bonsai_generated_tokens_total");
    EXPECT_LT(now - generated, 3000);
    generated = now;
  }
  // And the slot serves the next request.
  EXPECT_EQ(post_with(server.port(), "/api/generate",
                      {{"prompt", "Next"}, {"stream", false}, {"options", {{"num_predict", 2}}}})
                .status,
            200);
}

// A non-streamed request whose client leaves before the reply is cancelled
// too, and a request for a path under the APIs that does not exist is a 404
// in the API's shape.
TEST(ServerApiHardening, a_waiting_client_that_leaves_is_cancelled_and_unknown_paths_are_404) {
  const RunningServer server(server_options(1), 4096);
  const std::string body =
      json{{"max_tokens", 3000}, {"messages", {{{"role", "user"}, {"content", "Never read"}}}}}
          .dump();
  std::thread([&] {
    raw_exchange(server.port(), post_request(server.port(), "/v1/messages", body), false, 300ms);
  }).join();
  ASSERT_TRUE(
      eventually([&] { return metric(metrics_page(server), "bonsai_slots_busy") == 0; }, 10s));
  EXPECT_LT(metric(metrics_page(server), "bonsai_generated_tokens_total"), 3000);
  for (const char *path : {"/v1/messages/batches", "/api/pull", "/v1/responses/resp_1"}) {
    const auto r = raw_request(server.port(), get_request(server.port(), path));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_THAT(error_text(path, r->body), HasSubstr("No endpoint")) << path;
  }
}

} // namespace
