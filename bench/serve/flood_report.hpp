#pragma once
// What a flood run measured, the verdict on each target of the hardening
// issue, and the markdown tables that report both.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flood_connections.hpp"
#include "flood_cpu_usage.hpp"

namespace flood {

struct Measurements {
  int connections = 0;
  double seconds = 0;
  int grace = 0;
  FloodStats flood;
  std::vector<int> accept_queue;             // the server's, sampled every 100 ms
  std::vector<double> health_ms;             // probes answered 200
  std::map<std::string, long> health_misses; // why the others missed, by reason
  std::vector<double> completion_ms;         // completions answered 200
  std::map<std::string, long> completion_failures;
  long idle_rss = 0;            // bytes, median of samples before the flood
  long max_rss_sampled = 0;     // bytes, largest 100 ms sample during the flood
  std::optional<long> peak_rss; // VmHWM since the flood began, where it could be reset
  int64_t kv_positions = 0;
  int64_t kv_bytes_per_position = 0;
  bool gone_before_signal = false; // the server exited during the flood
  std::optional<double> sigterm_s; // nullopt: killed, or gone before the signal
  int exit_status = 0;             // waitpid's status
  std::vector<int> cpus;           // the CPUs the server and the tool ran on
  CpuUse cpu;                      // during the flood, until SIGTERM
  double server_cpu_s = 0;         // the same span
  double tool_cpu_s = 0;
};

struct Verdict {
  bool health = false;
  bool completion = false;
  bool rss = false;
  bool sigterm = false;
  bool all() const { return health && completion && rss && sigterm; }
};

Verdict judge(const Measurements &m);
void print_report(const Measurements &m, const Verdict &v);

} // namespace flood
