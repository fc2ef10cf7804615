#pragma once
// The gauges that load balancers, the inference gateway's endpoint picker
// and autoscalers read from /metrics: requests waiting and running, the
// fraction of the KV cache that running requests hold, and the cache's
// shape, under bonsai's names and, when asked, under vLLM's as well
// (docs/deploy.md, "Metrics for routers").
#include <string>

#include "base/metrics.hpp"

namespace bonsai::server {

// The KV positions running requests hold over all positions, in [0, 1].
// Idle slots' cached prompts do not count: a new request may take them.
double kv_usage_fraction(const LoadGauges &load);

// Escapes a Prometheus label value (backslash, double quote, new line).
std::string label_value(const std::string &text);

// Appends the load gauges of `load` (HELP and TYPE lines included) for the
// served model `model`; with `vllm_names`, also vllm:num_requests_waiting,
// vllm:num_requests_running, vllm:kv_cache_usage_perc and
// vllm:cache_config_info.
void write_load(std::string &out, const LoadGauges &load, const std::string &model,
                bool vllm_names);

} // namespace bonsai::server
