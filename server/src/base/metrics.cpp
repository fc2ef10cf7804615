#include "base/metrics.hpp"

#include "base/router_metrics.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace bonsai::server {

void Histogram::observe(double value) {
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  if (static_cast<size_t>(bucket) < counts_.size())
    ++counts_[static_cast<size_t>(bucket)];
  ++count_;
  sum_ += value;
}

void Histogram::write(std::string &out, const std::string &name) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
}

Metrics::Metrics(bool vllm_names)
    : ttft_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      itl_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      vllm_names_(vllm_names) {}

void Metrics::request_finished(const std::string &endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::tokens(int64_t prompt, int64_t cached, int64_t generated) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += static_cast<uint64_t>(prompt);
  cached_tokens_ += static_cast<uint64_t>(cached);
  generated_tokens_ += static_cast<uint64_t>(generated);
}

void Metrics::constrained(int64_t tokens, int64_t masks, double seconds) {
  std::lock_guard lock(mutex_);
  constrained_tokens_ += static_cast<uint64_t>(tokens);
  constraint_masks_ += static_cast<uint64_t>(masks);
  constraint_seconds_ += seconds;
}

void Metrics::drafted(int64_t verified, int64_t kept) {
  std::lock_guard lock(mutex_);
  draft_tokens_ += static_cast<uint64_t>(verified);
  draft_accepted_ += static_cast<uint64_t>(kept);
}

void Metrics::time_to_first_token(double seconds) {
  std::lock_guard lock(mutex_);
  ttft_.observe(seconds);
}

void Metrics::inter_token_latency(double seconds) {
  std::lock_guard lock(mutex_);
  itl_.observe(seconds);
}

void Metrics::set_ready(bool ready) {
  std::lock_guard lock(mutex_);
  ready_ = ready;
}

std::string Metrics::render(const std::optional<LoadGauges> &load, const std::string &model) const {
  std::lock_guard lock(mutex_);
  std::string out;
  auto header = [&](const char *name, const char *type, const char *help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  header("bonsai_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
  for (const auto &[key, count] : requests_)
    out += fmt::format("bonsai_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first,
                       key.second, count);
  header("bonsai_prompt_tokens_total", "counter", "Prompt tokens of finished requests.");
  out += fmt::format("bonsai_prompt_tokens_total {}\n", prompt_tokens_);
  header("bonsai_prompt_tokens_cached_total", "counter",
         "Prompt tokens reused from the prompt cache instead of being evaluated.");
  out += fmt::format("bonsai_prompt_tokens_cached_total {}\n", cached_tokens_);
  header("bonsai_generated_tokens_total", "counter", "Tokens generated.");
  out += fmt::format("bonsai_generated_tokens_total {}\n", generated_tokens_);
  header("bonsai_constrained_tokens_total", "counter",
         "Tokens chosen under a response_format or a required tool call.");
  out += fmt::format("bonsai_constrained_tokens_total {}\n", constrained_tokens_);
  header("bonsai_constraint_masks_total", "counter",
         "Constrained tokens for which the sampled token was refused and the full mask computed.");
  out += fmt::format("bonsai_constraint_masks_total {}\n", constraint_masks_);
  header("bonsai_constraint_seconds_total", "counter",
         "Time spent checking tokens against formats and computing masks.");
  out += fmt::format("bonsai_constraint_seconds_total {:.6f}\n", constraint_seconds_);
  header("bonsai_draft_tokens_total", "counter",
         "Drafted tokens (prompt lookup or a draft model) verified by the model.");
  out += fmt::format("bonsai_draft_tokens_total {}\n", draft_tokens_);
  header("bonsai_draft_accepted_tokens_total", "counter",
         "Drafted tokens the model kept (each a step saved).");
  out += fmt::format("bonsai_draft_accepted_tokens_total {}\n", draft_accepted_);
  write_load(out, load.value_or(LoadGauges{}), model, vllm_names_);
  header("bonsai_ready", "gauge", "1 once the model is loaded.");
  out += fmt::format("bonsai_ready {}\n", ready_ ? 1 : 0);
  header("bonsai_time_to_first_token_seconds", "histogram",
         "From a request's arrival to its first generated token.");
  ttft_.write(out, "bonsai_time_to_first_token_seconds");
  header("bonsai_inter_token_latency_seconds", "histogram",
         "Between consecutive generated tokens of one request.");
  itl_.write(out, "bonsai_inter_token_latency_seconds");
  return out;
}

} // namespace bonsai::server
