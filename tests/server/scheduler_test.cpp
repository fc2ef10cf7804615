// Continuous batching under load, the bounded queue, cancellation when a
// client goes away, and the server's life: loading, a failed load, shutdown.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>

#include "server_test_support.hpp"

namespace {

using namespace server_test;
using ::testing::HasSubstr;

// A request of client c, round r: prompts differ in content and length.
std::string load_prompt(int c, int r) {
  return "Client " + std::to_string(c) + " asks question " + std::to_string(r) +
         std::string(static_cast<size_t>((c * 7 + r * 3) % 23), '!');
}

json greedy_completion(const std::string &prompt, int max_tokens, bool stream) {
  json body = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  if (stream)
    body["stream"] = true;
  return body;
}

// 16 clients send requests of 24 tokens through 4 slots, one after another,
// for a fixed time (at least one each, at most 4), so that a slow host runs
// fewer rounds instead of running out of time. Every request completes, and
// each reply is exactly what the same request gives alone
// (Session::generate, one sequence, no batching), so nothing is lost or
// mixed between streams.
TEST(ServerLoad, concurrent_clients_each_get_their_own_greedy_reply) {
  constexpr int kClients = 16, kMaxRounds = 4, kTokens = 24;
  static constexpr auto kBudget = std::chrono::seconds(15);
  bonsai::server::ServerOptions options = server_options(4);
  options.max_queue = kClients;
  const RunningServer server(options);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::future<std::vector<std::string>>> clients;
  for (int c = 0; c < kClients; ++c)
    clients.push_back(std::async(std::launch::async, [&server, &start, c] {
      std::vector<std::string> problems;
      for (int r = 0;
           r < kMaxRounds && (r == 0 || std::chrono::steady_clock::now() - start < kBudget); ++r) {
        const std::string prompt = load_prompt(c, r);
        const bool stream = (c + r) % 2 == 0;
        std::string text;
        if (stream) {
          const Streamed s = post_stream(server, "/v1/completions",
                                         greedy_completion(prompt, kTokens, true).dump());
          if (s.status != 200 || s.events.empty() || s.events.back() != "[DONE]") {
            problems.push_back(prompt + ": stream failed with " + std::to_string(s.status));
            continue;
          }
          for (size_t i = 0; i + 1 < s.events.size(); ++i)
            text += json::parse(s.events[i])["choices"][0]["text"].get<std::string>();
        } else {
          const auto response =
              post(server, "/v1/completions", greedy_completion(prompt, kTokens, false).dump());
          if (response.status != 200) {
            problems.push_back(prompt + ": " + std::to_string(response.status) + " " +
                               response.body);
            continue;
          }
          text = json::parse(response.body)["choices"][0]["text"].get<std::string>();
        }
        problems.push_back(prompt + "\x1f" + text);
      }
      return problems;
    }));
  std::map<std::string, std::string> replies;
  for (auto &client : clients)
    for (const std::string &line : client.get()) {
      const size_t split = line.find('\x1f');
      ASSERT_NE(split, std::string::npos) << line;
      replies[line.substr(0, split)] = line.substr(split + 1);
    }
  EXPECT_GE(replies.size(), static_cast<size_t>(kClients));
  const bonsai::Engine engine = open_tiny();
  bonsai::Session session = engine.create_session();
  for (const auto &[prompt, text] : replies) {
    bonsai::GenerateRequest request;
    request.prompt = prompt;
    request.n_predict = kTokens;
    request.sampling.temperature = 0;
    EXPECT_EQ(text, session.generate(request).text) << prompt;
  }
  EXPECT_TRUE(eventually(
      [&] {
        const std::string page = metrics_page(server);
        return metric(page, "bonsai_slots_busy") == 0 && metric(page, "bonsai_queue_depth") == 0;
      },
      std::chrono::seconds(5)));
}

// A long streamed reply in the only slot, one request queued: the next one
// gets 429 with Retry-After, and the server serves again once they end.
TEST(ServerQueue, a_full_queue_answers_429) {
  bonsai::server::ServerOptions options = server_options(1);
  options.max_queue = 1;
  const RunningServer server(options, 4096);
  std::atomic<bool> leave{false};
  auto long_reply = std::async(std::launch::async, [&server, &leave] {
    return post_stream(server, "/v1/completions",
                       greedy_completion("Tell a long story", 4000, true).dump(), 0, &leave);
  });
  ASSERT_TRUE(eventually([&] { return metric(metrics_page(server), "bonsai_slots_busy") == 1; },
                         std::chrono::seconds(10)));
  auto queued = std::async(std::launch::async, [&server] {
    return post(server, "/v1/completions", greedy_completion("Queued", 2, false).dump());
  });
  ASSERT_TRUE(eventually([&] { return metric(metrics_page(server), "bonsai_queue_depth") == 1; },
                         std::chrono::seconds(10)));
  httplib::Client client = server.client();
  auto rejected = client.Post("/v1/completions", greedy_completion("Rejected", 2, false).dump(),
                              "application/json");
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected->status, 429);
  EXPECT_EQ(rejected->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(rejected->body)["error"]["code"], "queue_full");
  // The long reply's client leaves; the queued one then runs.
  leave.store(true);
  long_reply.get();
  EXPECT_EQ(queued.get().status, 200);
}

// Clients that go away free their slot at once: one that drops a stream
// after its first chunk, and one that sends a non-streamed request and
// closes while its prompt is still being read.
TEST(ServerCancel, a_client_that_goes_away_frees_its_slot) {
  const RunningServer server(server_options(1), 4096);
  const Streamed dropped = post_stream(server, "/v1/completions",
                                       greedy_completion("Go on and on", 4000, true).dump(), 100);
  // The client gave up mid-reply: cpp-httplib reports that as a failure.
  EXPECT_TRUE(dropped.status == 200 || dropped.status == -1) << dropped.status;
  EXPECT_FALSE(dropped.events.empty());
  ASSERT_TRUE(eventually([&] { return metric(metrics_page(server), "bonsai_slots_busy") == 0; },
                         std::chrono::seconds(10)));
  EXPECT_LT(metric(metrics_page(server), "bonsai_generated_tokens_total"), 4000);

  const std::string body = greedy_completion("Never read", 4000, false).dump();
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                              "application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  std::thread([&] {
    raw_exchange(server.port(), request, false, std::chrono::milliseconds(300));
  }).join();
  ASSERT_TRUE(eventually([&] { return metric(metrics_page(server), "bonsai_slots_busy") == 0; },
                         std::chrono::seconds(10)));
  EXPECT_LT(metric(metrics_page(server), "bonsai_generated_tokens_total"), 8000);
  // And the slot serves the next request.
  EXPECT_EQ(post(server, "/v1/completions", greedy_completion("Next", 3, false).dump()).status,
            200);
}

TEST(ServerLife, health_is_503_while_loading_then_200) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  bonsai::server::Server server(server_options(), [released] {
    released.wait();
    return open_tiny();
  });
  httplib::Client client("127.0.0.1", server.port());
  auto loading = client.Get("/health");
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, 503);
  auto early = client.Post("/v1/completions", R"({"prompt": "hi"})", "application/json");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->status, 503);
  EXPECT_THAT(early->body, HasSubstr("loading"));
  release.set_value();
  server.wait_loaded();
  EXPECT_EQ(client.Get("/health")->status, 200);
}

TEST(ServerLife, a_failed_load_is_reported_by_health) {
  bonsai::server::Server server(server_options(), [] {
    return bonsai::Engine::open(data_path("does-not-exist.gguf"), engine_options());
  });
  server.wait_loaded();
  EXPECT_FALSE(server.ready());
  EXPECT_THAT(server.load_error(), HasSubstr("does-not-exist.gguf"));
  httplib::Client client("127.0.0.1", server.port());
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 500);
  EXPECT_THAT(health->body, HasSubstr("does-not-exist.gguf"));
}

// Shutdown lets a running reply finish within the grace period and refuses
// new work meanwhile.
TEST(ServerLife, shutdown_finishes_running_replies_and_refuses_new_ones) {
  RunningServer server(server_options(1));
  auto running = std::async(std::launch::async, [&server] {
    return post_stream(server, "/v1/completions", greedy_completion("Finish me", 200, true).dump());
  });
  ASSERT_TRUE(eventually([&] { return metric(metrics_page(server), "bonsai_slots_busy") == 1; },
                         std::chrono::seconds(10)));
  server.server->shutdown(std::chrono::seconds(30));
  httplib::Client client = server.client();
  auto health = client.Get("/health");
  if (health) { // the listener may already be closing
    EXPECT_EQ(health->status, 503);
  }
  const Streamed finished = running.get();
  EXPECT_EQ(finished.status, 200);
  ASSERT_FALSE(finished.events.empty());
  EXPECT_EQ(finished.events.back(), "[DONE]");
  server.server->wait();
}

} // namespace
