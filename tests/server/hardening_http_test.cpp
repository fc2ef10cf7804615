// The server's HTTP layer against what an attacker sends, over real sockets:
// limits hold while a request is read (bodies in every transfer form,
// headers), answers given before the body close the connection (no request
// desync), slow clients are timed out and cannot starve others, connections
// are limited per client and in all, browsers' cross-site requests and DNS
// rebinding are refused, Range cannot amplify an answer, and the smaller
// protocol divergences a review found.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include <fmt/format.h>

#include "server_test_support.hpp"

namespace {

using namespace server_test;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

std::string error_message(const RawResponse &response) {
  const json body = json::parse(response.body, nullptr, false);
  return body.is_object() ? body["error"].value("message", "") : "";
}

// A server with small limits, so that tests reach them quickly.
bonsai::server::ServerOptions small_limits() {
  bonsai::server::ServerOptions options = server_options();
  options.max_body_bytes = 64 * 1024;
  options.max_header_bytes = 8 * 1024;
  return options;
}

// Sends `head`, then `piece` again and again (never ending the request)
// until the server answers; returns what it answered.
std::optional<RawResponse> answer_to_endless(int port, const std::string &head,
                                             const std::string &piece) {
  RawConnection connection(port);
  connection.send_all(head);
  std::string received;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!connection.send_all(piece)) {
      received += connection.read_for(1s);
      break;
    }
    received += connection.read_for(1ms);
    if (!parse_responses(received).empty())
      break;
  }
  std::vector<RawResponse> responses = parse_responses(received);
  if (responses.empty())
    return std::nullopt;
  return responses.front();
}

TEST(ServerHardening, deep_nesting_in_a_copied_field_is_refused_and_the_server_lives) {
  bonsai::server::ServerOptions options = server_options();
  options.max_body_bytes = 2 << 20;
  const RunningServer server(options);
  // The crash the review found: nesting inside a field the server copied.
  const std::string deep = std::string(450000, '[') + std::string(450000, ']');
  for (const std::string &body :
       {R"({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": )" + deep +
            "}}",
        R"({"prompt": "hi", "stop": )" + deep + "}",
        R"({"messages": [{"role": "user", "content": [{"type": )" + deep + "}]}]}"}) {
    const auto response =
        raw_request(server.port(), post_request(server.port(), "/v1/chat/completions", body));
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 400);
    EXPECT_THAT(error_message(*response), HasSubstr("deeper than 64 levels"));
  }
  EXPECT_EQ(raw_request(server.port(), get_request(server.port(), "/health"))->status, 200);
}

TEST(ServerHardening, json_arrays_objects_and_strings_past_their_limits_are_refused) {
  bonsai::server::ServerOptions options = server_options();
  options.json.max_string_bytes = 1000;
  options.json.max_array_items = 500;
  options.json.max_object_fields = 50;
  const RunningServer server(options);
  json many_fields = {{"prompt", "hi"}};
  json fields = json::object();
  for (int i = 0; i < 51; ++i)
    fields[fmt::format("k{}", i)] = i;
  many_fields["stream_options"] = fields;
  const struct {
    std::string body;
    const char *message;
  } cases[] = {
      {json({{"prompt", std::string(1001, 'a')}}).dump(), "longer than 1000 bytes"},
      {json({{"prompt", std::vector<int>(501, 5)}}).dump(), "more than 500 items"},
      {many_fields.dump(), "more than 50 fields"},
  };
  for (const auto &c : cases) {
    const auto response =
        raw_request(server.port(), post_request(server.port(), "/v1/completions", c.body));
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 400);
    EXPECT_THAT(error_message(*response), HasSubstr(c.message));
  }
  // At the limits themselves, the request goes through.
  const auto fits = raw_request(
      server.port(),
      post_request(server.port(), "/v1/completions",
                   json({{"prompt", std::string(1000, 'a')}, {"max_tokens", 1}}).dump()));
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits->status, 400); // 1000 letters are more tokens than the context holds
  EXPECT_THAT(error_message(*fits), HasSubstr("context window"));
}

TEST(ServerHardening, a_chunked_body_past_the_limit_gets_413_while_it_is_still_coming) {
  const RunningServer server(small_limits());
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  // 4 KiB chunks, never the last one.
  const std::string chunk = "1000\r\n" + std::string(4096, 'a') + "\r\n";
  const auto response = answer_to_endless(server.port(), head, chunk);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 413);
  EXPECT_EQ(response->header("connection"), "close");
}

TEST(ServerHardening, a_declared_length_past_the_limit_gets_413_before_any_body_byte) {
  const RunningServer server(small_limits());
  RawConnection connection(server.port());
  connection.send_all("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                      "application/json\r\nContent-Length: 100000000\r\n\r\n");
  std::string received;
  EXPECT_TRUE(connection.closes_within(10s, &received));
  const auto responses = parse_responses(received);
  ASSERT_EQ(responses.size(), 1u) << received;
  EXPECT_EQ(responses[0].status, 413);
}

TEST(ServerHardening, compressed_bodies_and_other_codings_are_refused_unread) {
  const RunningServer server(small_limits());
  const std::string gzip_body("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8);
  auto gzip = raw_request(server.port(), post_request(server.port(), "/v1/completions", gzip_body,
                                                      "Content-Encoding: gzip\r\n"));
  ASSERT_TRUE(gzip);
  EXPECT_EQ(gzip->status, 415);
  auto coding = raw_request(
      server.port(), "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     "application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n");
  ASSERT_TRUE(coding);
  EXPECT_EQ(coding->status, 501);
  // Both framings at once is how requests are smuggled past proxies.
  auto both = raw_request(server.port(),
                          "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                          "application/json\r\nContent-Length: 5\r\nTransfer-Encoding: "
                          "chunked\r\n\r\n0\r\n\r\n");
  ASSERT_TRUE(both);
  EXPECT_EQ(both->status, 400);
}

// What fuzz_http found in the first version of the request reader.
TEST(ServerHardening, repeated_fields_trailers_and_heads_sent_in_parts_are_held_to_the_limits) {
  const RunningServer server(small_limits());
  const int port = server.port();
  const std::string body = R"({"prompt": "hi", "max_tokens": 1})";
  // A second Content-Encoding that says gzip after one that says identity.
  const auto repeated =
      raw_request(port, post_request(port, "/v1/completions", body,
                                     "Content-Encoding: identity\r\nContent-Encoding: gzip\r\n"));
  ASSERT_TRUE(repeated);
  EXPECT_EQ(repeated->status, 400);
  EXPECT_THAT(error_message(*repeated), HasSubstr("repeats"));
  // Fields in a chunked body's trailer would join the head after it was checked.
  const auto trailer =
      raw_request(port, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                        "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                            fmt::format("{:x}\r\n{}\r\n0\r\nContent-Encoding: gzip\r\n\r\n",
                                        body.size(), body));
  ASSERT_TRUE(trailer);
  EXPECT_EQ(trailer->status, 400);
  EXPECT_THAT(error_message(*trailer), HasSubstr("Trailer"));
  // A head over the 8 KiB limit that arrives in two parts.
  RawConnection parts(port);
  parts.send_all("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: " + std::string(5000, 'a') +
                 "\r\n");
  std::this_thread::sleep_for(100ms);
  parts.send_all("X-B: " + std::string(5000, 'b') + "\r\n\r\n");
  std::string received;
  EXPECT_TRUE(parts.closes_within(10s, &received));
  const auto responses = parse_responses(received);
  ASSERT_EQ(responses.size(), 1u) << received;
  EXPECT_EQ(responses[0].status, 431);
}

TEST(ServerHardening, a_body_without_a_length_is_not_read) {
  const RunningServer server(small_limits());
  RawConnection connection(server.port());
  // No Content-Length and no chunking: HTTP/1.1 says there is no body. The
  // server answers at once (it does not read until the client closes), and
  // the bytes that follow are taken as the next request, which is garbage.
  connection.send_all("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: application/json\r\n\r\n");
  connection.send_all(R"({"prompt": "this is not a body"})");
  std::string received;
  EXPECT_TRUE(connection.closes_within(10s, &received));
  const auto responses = parse_responses(received);
  ASSERT_EQ(responses.size(), 2u) << received;
  EXPECT_EQ(responses[0].status, 400);
  EXPECT_THAT(error_message(responses[0]), HasSubstr("not valid JSON"));
  EXPECT_EQ(responses[1].status, 400);
  EXPECT_THAT(error_message(responses[1]), HasSubstr("Malformed HTTP request"));
}

TEST(ServerHardening, large_bodies_in_flight_share_one_budget_and_small_ones_ride_free) {
  bonsai::server::ServerOptions options = small_limits();
  options.max_body_bytes = 256 * 1024;
  options.max_bodies_in_flight_bytes = 150 * 1024; // raised to 192 KiB: 256 less the free 64
  const RunningServer server(options);
  // Two bodies of 160 KiB announced and left unsent: past the first 64 KiB
  // of each, they hold 192 KiB of the budget.
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                           "application/json\r\nContent-Length: 163840\r\n\r\n";
  RawConnection first(server.port()), second(server.port());
  first.send_all(head);
  second.send_all(head);
  EXPECT_TRUE(eventually(
      [&] {
        const auto third = raw_request(server.port(), head, 2s);
        return third && third->status == 503 &&
               error_message(*third).find("request bodies") != std::string::npos;
      },
      10s));
  // A small request is still served while the large ones fill the budget.
  const auto small =
      raw_request(server.port(), post_request(server.port(), "/v1/completions",
                                              R"({"prompt": "hi", "max_tokens": 1})"));
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200);
}

TEST(ServerHardening, headers_past_the_limit_get_431_while_they_are_still_coming) {
  const RunningServer server(small_limits());
  // One endless header line.
  const auto line = answer_to_endless(
      server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: ", std::string(1024, 'a'));
  ASSERT_TRUE(line);
  EXPECT_EQ(line->status, 431);
  // Endless short header lines.
  const auto lines =
      answer_to_endless(server.port(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", "X-A: b\r\n");
  ASSERT_TRUE(lines);
  EXPECT_EQ(lines->status, 431);
}

TEST(ServerHardening, the_header_count_limit_counts_the_clients_fields_exactly) {
  const RunningServer server;
  const auto with_fields = [&](int count) {
    std::string headers;
    for (int i = 1; i < count; ++i) // Host is the first
      headers += "X-F" + std::to_string(i) + ": v\r\n";
    return raw_request(server.port(), get_request(server.port(), "/health", headers));
  };
  EXPECT_EQ(with_fields(100)->status, 200);
  EXPECT_EQ(with_fields(101)->status, 431);
}

TEST(ServerHardening,
     an_answer_before_the_body_closes_the_connection_so_the_body_is_never_a_request) {
  bonsai::server::ServerOptions options = server_options();
  options.api_keys = {"s3cret"};
  const RunningServer server(options);
  // The body is itself a request; if the server read it as the next one, a
  // second answer would follow the 401.
  const std::string smuggled = get_request(server.port(), "/health");
  for (const std::string &request :
       {post_request(server.port(), "/v1/completions", smuggled),
        post_request(server.port(), "/v1/completions", smuggled, "Authorization: Bearer s3cret\r\n",
                     "text/plain")}) {
    RawConnection connection(server.port());
    connection.send_all(request);
    std::string received;
    EXPECT_TRUE(connection.closes_within(10s, &received));
    const auto responses = parse_responses(received);
    ASSERT_EQ(responses.size(), 1u) << received;
    EXPECT_TRUE(responses[0].status == 401 || responses[0].status == 415) << responses[0].status;
    EXPECT_EQ(responses[0].header("connection"), "close");
  }
}

TEST(ServerHardening, pipelined_requests_and_expect_continue_still_work) {
  const RunningServer server;
  RawConnection connection(server.port());
  connection.send_all(get_request(server.port(), "/health") +
                      get_request(server.port(), "/v1/models"));
  std::string received;
  ASSERT_TRUE(eventually(
      [&] {
        received += connection.read_for(50ms);
        return parse_responses(received).size() == 2;
      },
      10s));
  const auto both = parse_responses(received);
  EXPECT_EQ(both[0].status, 200);
  EXPECT_EQ(json::parse(both[1].body)["data"][0]["id"], "tiny-q1");

  // What curl does for larger bodies: the head, then the body once told.
  const std::string body = R"({"prompt": "hi", "max_tokens": 2, "temperature": 0})";
  RawConnection expecting(server.port());
  const std::string request =
      post_request(server.port(), "/v1/completions", body, "Expect: 100-continue\r\n");
  expecting.send_all(request.substr(0, request.size() - body.size()));
  std::string interim;
  EXPECT_TRUE(eventually(
      [&] {
        interim += expecting.read_for(20ms);
        return interim.find("\r\n\r\n") != std::string::npos;
      },
      10s));
  EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
  expecting.send_all(body);
  std::string answer;
  ASSERT_TRUE(eventually(
      [&] {
        answer += expecting.read_for(50ms);
        return !parse_responses(answer).empty();
      },
      30s));
  EXPECT_EQ(parse_responses(answer)[0].status, 200);
}

TEST(ServerHardening, slow_clients_are_timed_out_and_do_not_stall_others) {
  bonsai::server::ServerOptions options = server_options();
  options.request_timeout = 3s;
  options.read_timeout = 2s;
  const RunningServer server(options);
  // Each sends a byte of its head every 200 ms: under the read timeout, so
  // only the whole-request deadline ends them.
  std::vector<RawConnection> slow;
  for (int i = 0; i < 40; ++i) {
    slow.emplace_back(server.port());
    slow.back().send_all("GET /health HTTP/1.1\r\n");
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<bool> answered(slow.size(), false);
  std::vector<int> statuses(slow.size(), 0);
  while (std::chrono::steady_clock::now() - start < 15s &&
         std::count(answered.begin(), answered.end(), false) > 0) {
    for (size_t i = 0; i < slow.size(); ++i) {
      if (answered[i])
        continue;
      slow[i].send_all("X");
      std::string bytes;
      if (slow[i].closes_within(1ms, &bytes) || !parse_responses(bytes).empty()) {
        answered[i] = true;
        const auto responses = parse_responses(bytes);
        statuses[i] = responses.empty() ? -1 : responses[0].status;
      }
    }
    // Others are served meanwhile.
    const auto health = raw_request(server.port(), get_request(server.port(), "/health"), 5s);
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    std::this_thread::sleep_for(200ms);
  }
  for (size_t i = 0; i < slow.size(); ++i) {
    EXPECT_TRUE(answered[i]) << "slow client " << i << " was never cut off";
    EXPECT_TRUE(statuses[i] == 408 || statuses[i] == -1) << statuses[i];
  }
  EXPECT_GE(std::count(statuses.begin(), statuses.end(), 408), 1);
}

TEST(ServerHardening, shutdown_does_not_wait_for_slow_or_idle_clients) {
  RunningServer server;
  std::vector<RawConnection> held;
  for (int i = 0; i < 20; ++i) {
    held.emplace_back(server.port());
    held.back().send_all(i % 2 == 0 ? "GET /health HTTP/1.1\r\nHost: x" : "");
  }
  server.server->shutdown(1s);
  auto waited = std::async(std::launch::async, [&] { server.server->wait(); });
  // The grace, the flush of answers in progress, and a wide margin.
  EXPECT_EQ(waited.wait_for(10s), std::future_status::ready);
  for (RawConnection &connection : held)
    EXPECT_TRUE(connection.closes_within(5s));
}

TEST(ServerHardening, connections_are_limited_per_client_address_and_in_all) {
  bonsai::server::ServerOptions options = server_options();
  options.max_connections_per_client = 4;
  options.max_connections = 6;
  const RunningServer server(options);
  std::vector<RawConnection> held;
  for (int i = 0; i < 4; ++i)
    held.emplace_back(server.port(), "127.0.0.1");
  const auto fifth =
      raw_request(server.port(), get_request(server.port(), "/health"), 5s, "127.0.0.1");
  ASSERT_TRUE(fifth);
  EXPECT_EQ(fifth->status, 429);
  EXPECT_EQ(
      raw_request(server.port(), get_request(server.port(), "/health"), 5s, "127.0.0.2")->status,
      200);
  held.emplace_back(server.port(), "127.0.0.2");
  held.emplace_back(server.port(), "127.0.0.3");
  const auto seventh =
      raw_request(server.port(), get_request(server.port(), "/health"), 5s, "127.0.0.4");
  ASSERT_TRUE(seventh);
  EXPECT_EQ(seventh->status, 503);
  held.clear();
  EXPECT_TRUE(eventually(
      [&] {
        const auto again = raw_request(server.port(), get_request(server.port(), "/health"), 2s);
        return again && again->status == 200;
      },
      10s));
}

TEST(ServerHardening, foreign_hosts_are_refused_unless_allowed) {
  bonsai::server::ServerOptions options = server_options();
  options.allowed_hosts = {"bonsai.lan", ".example.org"};
  const RunningServer server(options);
  const auto with_host = [&](const std::string &host) {
    return raw_request(server.port(), "GET /health HTTP/1.1\r\nHost: " + host + "\r\n\r\n")->status;
  };
  // DNS rebinding arrives under the attacker's name.
  EXPECT_EQ(with_host("evil.example.com"), 403);
  EXPECT_EQ(with_host("evil.example.com:" + std::to_string(server.port())), 403);
  EXPECT_EQ(with_host("bonsai.lan.evil.com"), 403);
  EXPECT_EQ(with_host("127.0.0.1:" + std::to_string(server.port())), 200);
  EXPECT_EQ(with_host("[::1]:8080"), 200);
  EXPECT_EQ(with_host("localhost:" + std::to_string(server.port())), 200);
  EXPECT_EQ(with_host("bonsai.lan"), 200);
  EXPECT_EQ(with_host("BONSAI.LAN:8080"), 200);
  EXPECT_EQ(with_host("api.example.org"), 200);
  EXPECT_EQ(raw_request(server.port(), "GET /health HTTP/1.1\r\n\r\n")->status, 400);
}

TEST(ServerHardening, cross_site_requests_are_refused_and_configured_cors_is_answered) {
  const RunningServer plain;
  const int port = plain.port();
  const std::string body = R"({"prompt": "hi", "max_tokens": 1})";
  // A page on another site posting to a keyless local server.
  const auto foreign = raw_request(
      port, post_request(port, "/v1/completions", body, "Origin: http://evil.example\r\n"));
  EXPECT_EQ(foreign->status, 403);
  EXPECT_THAT(error_message(*foreign), HasSubstr("--cors-origin"));
  // Forms can post text/plain without a preflight.
  EXPECT_EQ(
      raw_request(port, post_request(port, "/v1/completions", body, "", "text/plain"))->status,
      415);
  // The server's own pages are same-origin.
  EXPECT_EQ(
      raw_request(port, post_request(port, "/v1/completions", body,
                                     "Origin: http://127.0.0.1:" + std::to_string(port) + "\r\n"))
          ->status,
      200);
  const auto options_plain = raw_request(port, "OPTIONS /v1/completions HTTP/1.1\r\nHost: "
                                               "127.0.0.1\r\n\r\n");
  EXPECT_EQ(options_plain->status, 204);
  EXPECT_EQ(options_plain->header("allow"), "POST, OPTIONS");
  // The asterisk form asks about the server as a whole (RFC 9112 3.2.4),
  // and only OPTIONS may use it.
  const auto options_server = raw_request(port, "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  ASSERT_TRUE(options_server);
  EXPECT_EQ(options_server->status, 204);
  EXPECT_EQ(options_server->header("allow"), "GET, POST, OPTIONS");
  const auto get_server = raw_request(port, "GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  ASSERT_TRUE(get_server);
  EXPECT_EQ(get_server->status, 400);

  bonsai::server::ServerOptions options = server_options();
  options.cors_origins = {"http://app.example:3000"};
  options.api_keys = {"k"};
  const RunningServer cors(options);
  const std::string preflight =
      "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: "
      "http://app.example:3000\r\nAccess-Control-Request-Method: POST\r\n"
      "Access-Control-Request-Headers: authorization, content-type\r\n\r\n";
  const auto allowed = raw_request(cors.port(), preflight);
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->status, 204); // no key needed: browsers send none with a preflight
  EXPECT_EQ(allowed->header("access-control-allow-origin"), "http://app.example:3000");
  EXPECT_THAT(allowed->header("access-control-allow-methods"), HasSubstr("POST"));
  EXPECT_EQ(allowed->header("access-control-allow-headers"), "authorization, content-type");
  const auto other = raw_request(
      cors.port(), std::string(preflight).replace(preflight.find("app.example"), 11, "evil.examp"));
  EXPECT_EQ(other->status, 403);
  const auto actual = raw_request(
      cors.port(), post_request(cors.port(), "/v1/completions", body,
                                "Origin: http://app.example:3000\r\nAuthorization: Bearer k\r\n"));
  EXPECT_EQ(actual->status, 200);
  EXPECT_EQ(actual->header("access-control-allow-origin"), "http://app.example:3000");
  // The compatibility notes are readable by the page (docs/server.md, "Compatibility").
  EXPECT_EQ(actual->header("access-control-expose-headers"),
            "Bonsai-Ignored-Fields, Bonsai-Warning");
  // An error to an allowed origin is readable by its page too.
  const auto refused =
      raw_request(cors.port(), post_request(cors.port(), "/v1/completions", body,
                                            "Origin: http://app.example:3000\r\n"));
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(refused->header("access-control-allow-origin"), "http://app.example:3000");
}

TEST(ServerHardening, range_headers_do_not_amplify_answers) {
  const RunningServer server;
  std::string ranges = "Range: bytes=0-0";
  for (int i = 0; i < 2000; ++i)
    ranges += ",0-0";
  const auto whole = raw_request(server.port(), get_request(server.port(), "/metrics"));
  const auto ranged =
      raw_request(server.port(), get_request(server.port(), "/metrics", ranges + "\r\n"));
  ASSERT_TRUE(whole && ranged);
  EXPECT_EQ(ranged->status, 200);
  EXPECT_THAT(ranged->header("content-type"), HasSubstr("text/plain"));
  // One copy of the page (a later scrape counts one more request).
  EXPECT_LE(ranged->body.size(), whole->body.size() + 200);
}

TEST(ServerHardening, small_divergences_are_fixed) {
  bonsai::server::ServerOptions options = server_options();
  options.api_keys = {"s3cret"};
  const RunningServer server(options);
  const int port = server.port();
  const std::string auth = "Authorization: Bearer s3cret\r\n";
  // A form body well under --max-body: refused for its type, not its size.
  const auto form =
      raw_request(port, post_request(port, "/v1/completions", "a=" + std::string(16 * 1024, 'b'),
                                     auth, "application/x-www-form-urlencoded"));
  EXPECT_EQ(form->status, 415);
  // Token-id errors name their field, and a 64-bit id is shown as sent.
  const auto vocab =
      raw_request(port, post_request(port, "/v1/completions", R"({"prompt": [1, 99999]})", auth));
  EXPECT_EQ(vocab->status, 400);
  EXPECT_EQ(json::parse(vocab->body)["error"]["param"], "prompt");
  const auto huge = raw_request(
      port, post_request(port, "/v1/completions", R"({"prompt": [18446744073709551615]})", auth));
  EXPECT_EQ(huge->status, 400);
  EXPECT_THAT(error_message(*huge), HasSubstr("18446744073709551615"));
  EXPECT_EQ(json::parse(huge->body)["error"]["param"], "prompt");
  // A known path with another method is 405 with Allow.
  const auto wrong = raw_request(port, get_request(port, "/v1/chat/completions", auth));
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->header("allow"), "POST, OPTIONS");
  EXPECT_EQ(raw_request(port, "DELETE /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")->status, 405);
  // The scheme of Authorization is case-insensitive.
  for (const char *scheme : {"bearer", "BEARER", "Bearer"}) {
    const auto models =
        raw_request(port, get_request(port, "/v1/models",
                                      std::string("Authorization: ") + scheme + " s3cret\r\n"));
    EXPECT_EQ(models->status, 200) << scheme;
  }
  EXPECT_EQ(
      raw_request(port, get_request(port, "/v1/models", "Authorization: Bearer s3cre\r\n"))->status,
      401);
}

} // namespace
