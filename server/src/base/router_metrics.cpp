#include "base/router_metrics.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace bonsai::server {
namespace {

// Each slot's cache is kept per position and a prompt prefix is reused to
// the token, so the cache's block is one position and its blocks are all
// positions of all slots.
constexpr int kBlockPositions = 1;

void family(std::string &out, const char *name, const char *type, const char *help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

int64_t capacity_of(const LoadGauges &load) {
  return static_cast<int64_t>(load.slots) * load.slot_positions;
}

} // namespace

double kv_usage_fraction(const LoadGauges &load) {
  const int64_t capacity = capacity_of(load);
  if (capacity <= 0)
    return 0.0;
  return std::clamp(static_cast<double>(load.kv_running) / static_cast<double>(capacity), 0.0, 1.0);
}

std::string label_value(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void write_load(std::string &out, const LoadGauges &load, const std::string &model,
                bool vllm_names) {
  const int64_t capacity = capacity_of(load);
  const double usage = kv_usage_fraction(load);
  const std::string name = label_value(model);
  family(out, "bonsai_queue_depth", "gauge", "Requests waiting for a slot.");
  out += fmt::format("bonsai_queue_depth {}\n", load.waiting);
  family(out, "bonsai_slots_busy", "gauge", "Slots generating a reply (requests running).");
  out += fmt::format("bonsai_slots_busy {}\n", load.running);
  family(out, "bonsai_slots", "gauge", "Slots (sequences generated at once, --parallel).");
  out += fmt::format("bonsai_slots {}\n", load.slots);
  family(out, "bonsai_kv_used_positions", "gauge",
         "KV cache positions held by all slots, cached prompt prefixes of idle slots included.");
  out += fmt::format("bonsai_kv_used_positions {}\n", load.kv_cached);
  family(out, "bonsai_kv_capacity_positions", "gauge", "KV cache positions of all slots.");
  out += fmt::format("bonsai_kv_capacity_positions {}\n", capacity);
  family(out, "bonsai_kv_cache_usage_ratio", "gauge",
         "Fraction of the KV cache held by running requests (0 to 1); idle slots' cached "
         "prompts do not count.");
  out += fmt::format("bonsai_kv_cache_usage_ratio {:.6f}\n", usage);
  family(out, "bonsai_cache_config_info", "gauge",
         "The KV cache's shape: positions per block, blocks, slots and positions per slot.");
  out += fmt::format("bonsai_cache_config_info{{model_name=\"{}\",block_size=\"{}\","
                     "num_blocks=\"{}\",slots=\"{}\",slot_positions=\"{}\"}} 1\n",
                     name, kBlockPositions, capacity / kBlockPositions, load.slots,
                     load.slot_positions);
  if (!vllm_names)
    return;
  // vLLM's names and labels, so that dashboards and routers made for vLLM
  // read bonsai unchanged (vLLM numbers its engines; bonsai has one).
  const std::string labels = fmt::format("engine=\"0\",model_name=\"{}\"", name);
  family(out, "vllm:num_requests_waiting", "gauge", "Requests waiting to be processed.");
  out += fmt::format("vllm:num_requests_waiting{{{}}} {}\n", labels, load.waiting);
  family(out, "vllm:num_requests_running", "gauge", "Requests running (generating).");
  out += fmt::format("vllm:num_requests_running{{{}}} {}\n", labels, load.running);
  family(out, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
  out += fmt::format("vllm:kv_cache_usage_perc{{{}}} {:.6f}\n", labels, usage);
  family(out, "vllm:cache_config_info", "gauge", "Information of the KV cache's configuration.");
  out += fmt::format("vllm:cache_config_info{{block_size=\"{}\",{},num_gpu_blocks=\"{}\"}} 1\n",
                     kBlockPositions, labels, capacity / kBlockPositions);
}

} // namespace bonsai::server
