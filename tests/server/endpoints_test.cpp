// The endpoints against independent expectations: the float64 reference's
// greedy continuation of the tiny golden model, and what Session::generate
// (one sequence, no server, no batching) gives for the same request.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "bonsai/log.hpp"
#include "sanitize_utf8.hpp"
#include "server_test_support.hpp"

namespace {

using namespace server_test;
using test_support::sanitize_utf8;
using ::testing::HasSubstr;

// What Session::generate answers for the same greedy request.
std::string session_text(const bonsai::GenerateRequest &request) {
  const bonsai::Engine engine = open_tiny();
  bonsai::Session session = engine.create_session();
  return session.generate(request).text;
}

bonsai::GenerateRequest greedy_chat(std::vector<bonsai::ChatMessage> messages, int32_t n) {
  bonsai::GenerateRequest request;
  request.messages = std::move(messages);
  request.n_predict = n;
  request.sampling.temperature = 0;
  return request;
}

json chat_body(const std::vector<bonsai::ChatMessage> &messages, int32_t max_tokens) {
  json list = json::array();
  for (const auto &m : messages)
    list.push_back({{"role", m.role}, {"content", m.content}});
  return {{"messages", list}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

// Text of the streamed chunks, checking the stream's framing on the way.
std::string streamed_text(const Streamed &streamed, bool chat, bool usage) {
  EXPECT_EQ(streamed.status, 200);
  EXPECT_THAT(streamed.content_type, HasSubstr("text/event-stream"));
  EXPECT_GE(streamed.events.size(), 3u);
  if (streamed.events.empty())
    return {};
  EXPECT_EQ(streamed.events.back(), "[DONE]");
  std::string text;
  int finishes = 0;
  for (size_t i = 0; i + 1 < streamed.events.size(); ++i) {
    const json chunk = parse(streamed.events[i]);
    EXPECT_EQ(chunk["object"], chat ? "chat.completion.chunk" : "text_completion");
    if (chunk["choices"].empty()) {
      EXPECT_TRUE(usage) << "a chunk without choices only carries usage";
      EXPECT_EQ(i + 2, streamed.events.size()) << "the usage chunk comes last";
      EXPECT_GT(chunk["usage"]["completion_tokens"].get<int>(), 0);
      continue;
    }
    const json &choice = chunk["choices"][0];
    if (chat) {
      if (i == 0) {
        EXPECT_EQ(choice["delta"]["role"], "assistant");
      }
      text += choice["delta"].value("content", "");
    } else {
      text += choice["text"].get<std::string>();
    }
    finishes += choice["finish_reason"].is_null() ? 0 : 1;
  }
  EXPECT_EQ(finishes, 1);
  return text;
}

// The accept queue of the server's listening socket, as the kernel holds it:
// for a listening TCP socket TCP_INFO's tcpi_sacked is its maximum backlog.
uint32_t listen_backlog_of_port(int port) {
  for (const auto &entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    int listening = 0;
    socklen_t size = sizeof listening;
    sockaddr_in local{};
    socklen_t local_size = sizeof local;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&local), &local_size) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != port)
      continue;
    tcp_info info{};
    socklen_t info_size = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_size) == 0)
      return info.tcpi_sacked;
  }
  return 0;
}

TEST(ServerEndpoints, the_accept_queue_holds_a_burst_of_clients) {
  // cpp-httplib's own backlog is 5: 32 clients connecting at once overflowed it.
  const RunningServer server;
  EXPECT_GE(listen_backlog_of_port(server.port()), 128u);
}

TEST(ServerEndpoints, health_and_models_describe_the_loaded_model) {
  const RunningServer server;
  httplib::Client client = server.client();
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(parse(health->body)["status"], "ok");
  auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  const json list = parse(models->body);
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], "tiny-q1");
  EXPECT_EQ(list["data"][0]["object"], "model");
}

TEST(ServerEndpoints, greedy_completion_is_the_float64_reference_continuation) {
  const Golden golden = load_golden();
  const RunningServer server;
  const json body = {{"model", "tiny-q1"},
                     {"prompt", golden.prompt},
                     {"max_tokens", golden.greedy.size()},
                     {"temperature", 0}};
  const auto response = post(server, "/v1/completions", body.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const json reply = parse(response.body);
  EXPECT_EQ(reply["object"], "text_completion");
  EXPECT_EQ(reply["model"], "tiny-q1");
  const bonsai::Engine engine = open_tiny();
  // The reference's ids split some characters across tokens, and the text of
  // an ill-formed byte is U+FFFD.
  EXPECT_EQ(reply["choices"][0]["text"], sanitize_utf8(engine.detokenize(golden.greedy)));
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(reply["usage"]["prompt_tokens"], golden.prompt.size());
  EXPECT_EQ(reply["usage"]["completion_tokens"], golden.greedy.size());
  EXPECT_EQ(reply["usage"]["total_tokens"], golden.prompt.size() + golden.greedy.size());
}

// A max_tokens past what the context has left is no error: the reply runs to
// the context's end and says "length". The golden prompt in a context of
// prompt + 10 positions leaves room for 11 tokens (the last one is sampled
// from the logits of the tenth position and needs no position of its own).
TEST(ServerEndpoints, max_tokens_past_the_context_ends_the_reply_at_the_context) {
  const Golden golden = load_golden();
  const auto n_ctx = static_cast<int32_t>(golden.prompt.size() + 10);
  const RunningServer server(server_options(), n_ctx);
  const json body = {{"model", "gpt-4o"}, // any name asks for the one model served
                     {"prompt", golden.prompt},
                     {"max_tokens", 100000},
                     {"temperature", 0}};
  const auto response = post(server, "/v1/completions", body.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const json reply = parse(response.body);
  EXPECT_EQ(reply["model"], "tiny-q1");
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "length");
  ASSERT_GE(golden.greedy.size(), 11u);
  const std::vector<int32_t> first(golden.greedy.begin(), golden.greedy.begin() + 11);
  const bonsai::Engine engine = open_tiny();
  EXPECT_EQ(reply["choices"][0]["text"], sanitize_utf8(engine.detokenize(first)));
  EXPECT_EQ(reply["usage"]["completion_tokens"], 11);
}

// At --log-level info every request gets one line: who, what, the status,
// the bytes and the time; probes of /health only at debug.
TEST(ServerEndpoints, requests_are_logged_at_info_and_health_probes_at_debug) {
  std::mutex mutex;
  std::vector<std::pair<bonsai::LogLevel, std::string>> lines;
  const bonsai::LogLevel before = bonsai::log_level();
  bonsai::set_log_level(bonsai::LogLevel::debug);
  bonsai::set_log_callback([&](bonsai::LogLevel level, std::string_view message) {
    std::lock_guard lock(mutex);
    lines.emplace_back(level, std::string(message));
  });
  {
    const RunningServer server;
    EXPECT_EQ(post(server, "/v1/completions", R"({"prompt": "hi", "max_tokens": 2})").status, 200);
    EXPECT_EQ(server.client().Get("/health")->status, 200);
    EXPECT_EQ(server.client().Get("/missing")->status, 404);
  }
  bonsai::set_log_callback({});
  bonsai::set_log_level(before);
  const auto level_of = [&](const std::string &part) {
    for (const auto &[level, text] : lines)
      if (text.find(part) != std::string::npos)
        return static_cast<int>(level);
    return -1;
  };
  EXPECT_EQ(level_of("127.0.0.1 POST /v1/completions -> 200, "),
            static_cast<int>(bonsai::LogLevel::info));
  EXPECT_EQ(level_of("127.0.0.1 GET /missing -> 404, "), static_cast<int>(bonsai::LogLevel::info));
  EXPECT_EQ(level_of("127.0.0.1 GET /health -> 200, "), static_cast<int>(bonsai::LogLevel::debug));
}

TEST(ServerEndpoints, streamed_completion_carries_the_same_text_then_usage_and_done) {
  const Golden golden = load_golden();
  const RunningServer server;
  json body = {{"prompt", golden.prompt}, {"max_tokens", golden.greedy.size()}, {"temperature", 0}};
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const Streamed streamed = post_stream(server, "/v1/completions", body.dump());
  const bonsai::Engine engine = open_tiny();
  EXPECT_EQ(streamed_text(streamed, false, true), sanitize_utf8(engine.detokenize(golden.greedy)));
}

TEST(ServerEndpoints, chat_equals_session_generate_whole_and_streamed) {
  const std::vector<bonsai::ChatMessage> messages = {{"system", "You are a terse assistant."},
                                                     {"user", "Name three colours."}};
  const std::string expected = session_text(greedy_chat(messages, 20));
  const RunningServer server;
  const auto response = post(server, "/v1/chat/completions", chat_body(messages, 20).dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const json reply = parse(response.body);
  EXPECT_EQ(reply["object"], "chat.completion");
  EXPECT_EQ(reply["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(reply["choices"][0]["message"]["content"], expected);
  EXPECT_GT(reply["usage"]["prompt_tokens"].get<int>(), 10);

  json body = chat_body(messages, 20);
  body["stream"] = true;
  EXPECT_EQ(streamed_text(post_stream(server, "/v1/chat/completions", body.dump()), true, false),
            expected);
}

TEST(ServerEndpoints, chat_with_thinking_off_equals_session_generate) {
  const std::vector<bonsai::ChatMessage> messages = {{"user", "Hello"}};
  bonsai::GenerateRequest request = greedy_chat(messages, 12);
  request.enable_thinking = false;
  const std::string expected = session_text(request);
  const RunningServer server;
  json body = chat_body(messages, 12);
  body["chat_template_kwargs"] = {{"enable_thinking", false}};
  const auto response = post(server, "/v1/chat/completions", body.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const json reply = parse(response.body);
  EXPECT_EQ(reply["choices"][0]["message"]["content"], expected);
}

TEST(ServerEndpoints, a_stop_string_ends_the_reply_before_it) {
  const Golden golden = load_golden();
  const bonsai::Engine engine = open_tiny();
  const std::string full = sanitize_utf8(engine.detokenize(golden.greedy));
  // A stop string from the middle of the reference continuation.
  const std::string stop = engine.detokenize(std::vector<int32_t>{golden.greedy[6]});
  ASSERT_FALSE(stop.empty());
  ASSERT_EQ(sanitize_utf8(stop), stop);
  const std::string expected = full.substr(0, full.find(stop));
  const RunningServer server;
  const json body = {{"prompt", golden.prompt},
                     {"max_tokens", golden.greedy.size()},
                     {"temperature", 0},
                     {"stop", {stop}}};
  const auto response = post(server, "/v1/completions", body.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const json reply = parse(response.body);
  EXPECT_EQ(reply["choices"][0]["text"], expected);
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "stop");
}

TEST(ServerEndpoints, a_shared_prefix_is_reused_from_the_prompt_cache_and_changes_nothing) {
  const std::string system(400, 'x');
  const std::vector<bonsai::ChatMessage> first = {{"system", system}, {"user", "First question"}};
  const std::vector<bonsai::ChatMessage> second = {{"system", system}, {"user", "Another one"}};
  const std::string expected = session_text(greedy_chat(second, 10));
  const RunningServer server(server_options(2));
  ASSERT_EQ(post(server, "/v1/chat/completions", chat_body(first, 10).dump()).status, 200);
  const auto response = post(server, "/v1/chat/completions", chat_body(second, 10).dump());
  ASSERT_EQ(response.status, 200) << response.body;
  const json reply = parse(response.body);
  EXPECT_GT(reply["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 20);
  EXPECT_EQ(reply["choices"][0]["message"]["content"], expected);
  EXPECT_GT(metric(metrics_page(server), "bonsai_prompt_tokens_cached_total"), 20);
}

TEST(ServerEndpoints, metrics_count_requests_tokens_and_latencies) {
  const Golden golden = load_golden();
  const RunningServer server;
  const json body = {{"prompt", golden.prompt}, {"max_tokens", 5}, {"temperature", 0}};
  ASSERT_EQ(post(server, "/v1/completions", body.dump()).status, 200);
  // The request counter and the slot gauges are updated just after the reply
  // goes out, so the page may lag the reply by a moment.
  const std::string done_line =
      "bonsai_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 1";
  std::string page;
  EXPECT_TRUE(eventually(
      [&] {
        page = metrics_page(server);
        return page.find(done_line) != std::string::npos && metric(page, "bonsai_slots_busy") == 0;
      },
      std::chrono::seconds(5)))
      << page;
  EXPECT_EQ(metric(page, "bonsai_generated_tokens_total"), 5);
  EXPECT_EQ(metric(page, "bonsai_prompt_tokens_total"), static_cast<double>(golden.prompt.size()));
  EXPECT_EQ(metric(page, "bonsai_slots"), 2);
  EXPECT_EQ(metric(page, "bonsai_slots_busy"), 0);
  EXPECT_EQ(metric(page, "bonsai_ready"), 1);
  EXPECT_EQ(metric(page, "bonsai_time_to_first_token_seconds_count"), 1);
  // Five tokens: four gaps between them.
  EXPECT_EQ(metric(page, "bonsai_inter_token_latency_seconds_count"), 4);
  EXPECT_THAT(page, HasSubstr("# TYPE bonsai_time_to_first_token_seconds histogram"));
}

} // namespace
