// A soak of slow clients: 120 connections from four other addresses that
// trickle request heads and bodies, or say nothing at all, while a normal
// client keeps asking /health and for completions. The normal client's
// answers must keep coming, at about the speed they came before the soak.
// Bounded by time, not by how fast the host computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>

#include "server_test_support.hpp"

namespace {

using namespace server_test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// Seconds one short greedy completion takes, or -1 when it failed.
double timed_completion(const RunningServer &server) {
  const std::string body = R"({"prompt": "Soak test", "max_tokens": 8, "temperature": 0})";
  const auto start = Clock::now();
  const auto response =
      raw_request(server.port(), post_request(server.port(), "/v1/completions", body), 60s);
  if (!response || response->status != 200)
    return -1;
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(ServerLoad, slow_clients_do_not_slow_normal_requests) {
  const RunningServer server;
  std::vector<double> before;
  for (int i = 0; i < 3; ++i)
    before.push_back(timed_completion(server));
  ASSERT_GT(*std::min_element(before.begin(), before.end()), 0);

  // Three kinds, 30 of each from each of four addresses: heads that never
  // end, bodies that never end, and silence.
  std::vector<RawConnection> slow;
  const char *sources[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"};
  const std::string body_head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                "application/json\r\nContent-Length: 100000\r\n\r\n{";
  for (int i = 0; i < 120; ++i) {
    slow.emplace_back(server.port(), sources[i % 4]);
    ASSERT_TRUE(slow.back().connected());
    if (i % 3 == 0)
      slow.back().send_all("POST /v1/completions HTTP/1.1\r\nX-Slow: ");
    else if (i % 3 == 1)
      slow.back().send_all(body_head);
  }
  std::atomic<bool> soaking{true};
  auto trickle = std::async(std::launch::async, [&] {
    while (soaking.load()) {
      for (size_t i = 0; i < slow.size(); ++i)
        if (i % 3 != 2)
          slow[i].send_all("a");
      std::this_thread::sleep_for(500ms);
    }
  });

  std::vector<double> during, health;
  int health_failures = 0;
  const auto end = Clock::now() + 8s;
  while (Clock::now() < end) {
    const auto start = Clock::now();
    const auto answer = raw_request(server.port(), get_request(server.port(), "/health"), 10s);
    health.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    health_failures += answer && answer->status == 200 ? 0 : 1;
    if (health.size() % 5 == 0)
      during.push_back(timed_completion(server));
    std::this_thread::sleep_for(100ms);
  }
  soaking.store(false);
  trickle.get();

  EXPECT_EQ(health_failures, 0);
  EXPECT_LT(*std::max_element(health.begin(), health.end()), 1.0);
  ASSERT_FALSE(during.empty());
  EXPECT_GT(*std::min_element(during.begin(), during.end()), 0) << "a completion failed";
  // The soak costs the normal client little: a generous bound that still
  // catches a server whose threads the slow clients hold.
  EXPECT_LT(median(during), 3 * median(before) + 0.5)
      << "before " << median(before) << " s, during " << median(during) << " s";
}

} // namespace
