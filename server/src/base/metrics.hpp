#pragma once
// The server's counters, gauges and latency histograms, written in the
// Prometheus text exposition format (version 0.0.4) for GET /metrics.
// Thread-safe: the HTTP threads and the scheduler update it concurrently.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace bonsai::server {

class Histogram {
public:
  explicit Histogram(std::vector<double> upper_bounds)
      : bounds_(std::move(upper_bounds)), counts_(bounds_.size(), 0) {}
  void observe(double value);
  // Appends the _bucket, _sum and _count lines of `name`.
  void write(std::string &out, const std::string &name) const;

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_; // per bucket, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

// The scheduler's load at one moment (Scheduler::load), read when /metrics
// is rendered: a router that scrapes every 50 ms must not see a figure older
// than its scrape.
struct LoadGauges {
  int32_t waiting = 0;        // requests waiting for a slot
  int32_t running = 0;        // slots generating a reply
  int32_t slots = 0;          // --parallel
  int32_t slot_positions = 0; // KV positions of one slot (n_ctx)
  int64_t kv_running = 0;     // KV positions held by running requests
  int64_t kv_cached = 0;      // KV positions held by all slots, idle slots' prompts included
};

class Metrics {
public:
  // `vllm_names`: also write the load under vLLM's names (router_metrics.hpp).
  explicit Metrics(bool vllm_names = false);
  void request_finished(const std::string &endpoint, int status);
  void tokens(int64_t prompt, int64_t cached, int64_t generated);
  // Constrained decoding of one finished request (Generation::constraint_stats).
  void constrained(int64_t tokens, int64_t masks, double seconds);
  // Speculative decoding: proposals verified in a step, and those kept.
  void drafted(int64_t verified, int64_t kept);
  void time_to_first_token(double seconds);
  void inter_token_latency(double seconds);
  void set_ready(bool ready);
  // `load`: the scheduler's load now, or nothing before the model is loaded
  // (every load gauge is then 0). `model`: the served model's name.
  std::string render(const std::optional<LoadGauges> &load, const std::string &model) const;

private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_; // (endpoint, status) -> count
  uint64_t draft_tokens_ = 0, draft_accepted_ = 0;
  uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0;
  uint64_t constrained_tokens_ = 0, constraint_masks_ = 0;
  double constraint_seconds_ = 0;
  Histogram ttft_, itl_;
  bool ready_ = false;
  const bool vllm_names_;
};

} // namespace bonsai::server
