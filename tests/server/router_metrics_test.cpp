// What routers and balancers read from a replica: the KV share of running
// requests, the cache's shape, vLLM's names when asked, and a stopping
// replica's refusals (503 with Retry-After, the connection closed).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "server_test_support.hpp"

namespace {

using namespace server_test;
using ::testing::HasSubstr;
using ::testing::Not;

json long_stream(const std::string &prompt, int tokens) {
  return {{"prompt", prompt}, {"max_tokens", tokens}, {"temperature", 0}, {"stream", true}};
}

// The tiny model with 2 slots of 512 positions: 1,024 in all.
TEST(RouterMetrics, kv_share_counts_running_requests_only) {
  const RunningServer server(server_options(2));
  std::string page = metrics_page(server);
  EXPECT_EQ(metric(page, "bonsai_kv_cache_usage_ratio"), 0);
  EXPECT_EQ(metric(page, "bonsai_slots"), 2);
  EXPECT_EQ(metric(page, "bonsai_kv_capacity_positions"), 1024);
  EXPECT_THAT(page, HasSubstr("\nbonsai_cache_config_info{model_name=\"tiny-q1\",block_size=\"1\","
                              "num_blocks=\"1024\",slots=\"2\",slot_positions=\"512\"} 1\n"));

  // A finished request leaves its prompt and reply cached in an idle slot:
  // used positions, but none held by a running request.
  const auto done = post(server, "/v1/completions",
                         json({{"prompt", "Cache this prompt"}, {"max_tokens", 8}}).dump());
  ASSERT_EQ(done.status, 200);
  // (The answer can reach the client a moment before the scheduler has
  // put the job down.)
  ASSERT_TRUE(
      eventually([&] { return metric(metrics_page(server), "bonsai_kv_cache_usage_ratio") == 0; },
                 std::chrono::seconds(10)));
  page = metrics_page(server);
  EXPECT_GT(metric(page, "bonsai_kv_used_positions"), 8);

  // A running stream holds its positions: the share is above 0, and no
  // more than what all slots hold.
  std::atomic<bool> leave{false};
  auto running = std::async(std::launch::async, [&] {
    return post_stream(server, "/v1/completions", long_stream("Keep going", 4000).dump(), 0,
                       &leave);
  });
  ASSERT_TRUE(
      eventually([&] { return metric(metrics_page(server), "bonsai_kv_cache_usage_ratio") > 0; },
                 std::chrono::seconds(10)));
  page = metrics_page(server);
  const double share = metric(page, "bonsai_kv_cache_usage_ratio");
  EXPECT_LE(share, 1.0);
  // The two gauges are read one after the other while the stream grows: the
  // share may count a few positions the used gauge had not yet.
  EXPECT_LE(share * 1024, metric(page, "bonsai_kv_used_positions") + 8);
  EXPECT_EQ(metric(page, "bonsai_slots_busy"), 1);
  leave.store(true);
  running.get();
  EXPECT_TRUE(
      eventually([&] { return metric(metrics_page(server), "bonsai_kv_cache_usage_ratio") == 0; },
                 std::chrono::seconds(10)));
}

TEST(RouterMetrics, vllm_names_only_when_asked) {
  EXPECT_THAT(metrics_page(RunningServer(server_options(1))), Not(HasSubstr("vllm:")));

  bonsai::server::ServerOptions options = server_options(1);
  options.vllm_metrics = true;
  options.model_id = "bonsai \"tiny\"";
  const RunningServer server(options);
  const std::string page = metrics_page(server);
  const std::string labels = "{engine=\"0\",model_name=\"bonsai \\\"tiny\\\"\"}";
  EXPECT_THAT(page, HasSubstr("\nvllm:num_requests_waiting" + labels + " 0\n"));
  EXPECT_THAT(page, HasSubstr("\nvllm:num_requests_running" + labels + " 0\n"));
  EXPECT_THAT(page, HasSubstr("\nvllm:kv_cache_usage_perc" + labels + " 0.000000\n"));
  EXPECT_THAT(page, HasSubstr("\nvllm:cache_config_info{block_size=\"1\",engine=\"0\","
                              "model_name=\"bonsai \\\"tiny\\\"\",num_gpu_blocks=\"512\"} 1\n"));
  // bonsai's own names stay.
  EXPECT_EQ(metric(page, "bonsai_queue_depth"), 0);
}

// On shutdown /health says 503 at once; a new request is refused with 503,
// Retry-After and Connection: close (a balancer retries it elsewhere), while
// the running stream goes on.
TEST(ServerLife, shutdown_refusals_say_when_and_close) {
  const RunningServer server(server_options(1), 4096);
  // Long enough (seconds) to outlast the checks, short enough to end within the grace.
  auto running = std::async(std::launch::async, [&] {
    return post_stream(server, "/v1/completions", long_stream("Run on", 2000).dump());
  });
  ASSERT_TRUE(eventually([&] { return metric(metrics_page(server), "bonsai_slots_busy") == 1; },
                         std::chrono::seconds(10)));
  server.server->shutdown(std::chrono::seconds(60));

  const auto health = raw_request(server.port(), get_request(server.port(), "/health"));
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(health->header("connection"), "close");

  const std::string body = json({{"prompt", "Refused"}, {"max_tokens", 2}}).dump();
  RawConnection connection(server.port());
  ASSERT_TRUE(connection.send_all(post_request(server.port(), "/v1/completions", body)));
  std::string bytes;
  bool closed = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!closed && std::chrono::steady_clock::now() < deadline)
    bytes += connection.read_for(std::chrono::milliseconds(50), &closed);
  EXPECT_TRUE(closed) << "the server kept the connection of a refused request open";
  const std::vector<RawResponse> answers = parse_responses(bytes);
  ASSERT_EQ(answers.size(), 1u) << bytes;
  EXPECT_EQ(answers[0].status, 503);
  EXPECT_EQ(answers[0].header("retry-after"), "1");
  EXPECT_EQ(answers[0].header("connection"), "close");

  // The running stream was not cut: it ends whole within the grace.
  const Streamed finished = running.get();
  EXPECT_EQ(finished.status, 200);
  ASSERT_FALSE(finished.events.empty());
  EXPECT_EQ(finished.events.back(), "[DONE]");
  server.server->wait();
}

} // namespace
