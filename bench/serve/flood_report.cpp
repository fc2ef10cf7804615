#include "flood_report.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>

namespace flood {
namespace {

constexpr double kHealthLimitMs = 1000;
constexpr double kMiB = 1024.0 * 1024.0;

// Nearest rank: the smallest value with at least p of the values at or below it.
template <class T> T percentile(std::vector<T> values, double p) {
  if (values.empty())
    return T{};
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(p * static_cast<double>(values.size()) + 0.999999);
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

template <class T> T largest(const std::vector<T> &values) {
  return values.empty() ? T{} : *std::max_element(values.begin(), values.end());
}

template <class T> T smallest(const std::vector<T> &values) {
  return values.empty() ? T{} : *std::min_element(values.begin(), values.end());
}

// Appends `item` to a list written "a, b, c".
void add_item(std::string &list, const std::string &item, const char *separator = ", ") {
  if (!list.empty())
    list += separator;
  list += item;
}

long count(const std::map<std::string, long> &by_reason) {
  long total = 0;
  for (const auto &entry : by_reason)
    total += entry.second;
  return total;
}

std::string reasons(const std::map<std::string, long> &by_reason) {
  std::string text;
  for (const auto &[reason, n] : by_reason)
    add_item(text, reason + " x" + std::to_string(n));
  return text.empty() ? "none" : text;
}

std::string answers(const std::map<int, long> &by_status) {
  std::string text;
  for (const auto &[status, n] : by_status)
    add_item(text, std::to_string(status) + " x" + std::to_string(n));
  return text.empty() ? "-" : text;
}

const char *verdict(bool met) {
  return met ? "met" : "**MISSED**";
}

std::string mib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", bytes / kMiB);
  return text;
}

long max_rss(const Measurements &m) {
  return std::max(m.max_rss_sampled, m.peak_rss.value_or(0));
}

double rss_bound(const Measurements &m) {
  return 2.0 * static_cast<double>(m.idle_rss) +
         static_cast<double>(m.kv_positions * m.kv_bytes_per_position);
}

std::string status_text(int status) {
  return WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                           : "signal " + std::to_string(WTERMSIG(status));
}

std::string exit_text(const Measurements &m) {
  if (m.gone_before_signal)
    return "the server ended during the flood (" + status_text(m.exit_status) + ")";
  if (!m.sigterm_s)
    return "did not exit; killed";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f s", *m.sigterm_s);
  return text + (" (" + status_text(m.exit_status) + ")");
}

void print_row(const std::string &what, const std::string &value, const std::string &target,
               const char *result) {
  std::printf("| %s | %s | %s | %s |\n", what.c_str(), value.c_str(), target.c_str(), result);
}

std::string cpu_list(const std::vector<int> &cpus) {
  std::string text;
  for (const int cpu : cpus)
    add_item(text, std::to_string(cpu), ",");
  return text;
}

// Evidence for the latencies: a server that waited for a CPU was slowed by
// the machine, not only by its own work.
void print_cpu(const Measurements &m) {
  char text[200];
  const double others = std::max(0.0, m.cpu.busy_s - m.server_cpu_s - m.tool_cpu_s);
  std::snprintf(text, sizeof(text), "%.1f of %.1f CPU-s: server %.1f, this tool %.1f, others %.1f",
                m.cpu.busy_s, m.cpu.wall_s * static_cast<double>(m.cpus.size()), m.server_cpu_s,
                m.tool_cpu_s, others);
  print_row("CPU busy during the flood (CPUs " + cpu_list(m.cpus) + ")", text, "", "");
  std::snprintf(text, sizeof(text), "%.1f s in all; the busiest thread %.1f s (%.1f s on CPU)",
                m.cpu.server_waiting_s, m.cpu.busiest.waiting_s, m.cpu.busiest.on_cpu_s);
  print_row("server threads runnable but waiting for a CPU", text, "", "");
}

void print_targets(const Measurements &m, const Verdict &v) {
  char text[160];
  std::printf("| measure | value | target | |\n|---|---|---|---|\n");
  std::snprintf(text, sizeof(text), "%d / %d", percentile(m.flood.held, 0.5),
                smallest(m.flood.held));
  print_row("flood connections held, median / min (of " + std::to_string(m.connections) + ")", text,
            "", "");
  std::snprintf(text, sizeof(text), "%d / %d", percentile(m.accept_queue, 0.5),
                largest(m.accept_queue));
  print_row("of them not yet accepted (server's accept queue), median / max", text, "", "");
  std::snprintf(text, sizeof(text), "%.1f / %.1f / %.1f ms; %ld missed of %zu",
                percentile(m.health_ms, 0.5), percentile(m.health_ms, 0.99), largest(m.health_ms),
                count(m.health_misses),
                m.health_ms.size() + static_cast<size_t>(count(m.health_misses)));
  print_row("/health p50 / p99 / max", text, "each probe 200 within 1 s", verdict(v.health));
  std::snprintf(text, sizeof(text), "%zu / %ld; p50 %.0f ms, max %.0f ms", m.completion_ms.size(),
                count(m.completion_failures), percentile(m.completion_ms, 0.5),
                largest(m.completion_ms));
  print_row("completions done / failed", text, ">= 1 done, none failed", verdict(v.completion));
  print_row("idle RSS", mib(static_cast<double>(m.idle_rss)), "", "");
  std::snprintf(text, sizeof(text), "%s (100 ms samples: %s, VmHWM: %s)",
                mib(static_cast<double>(max_rss(m))).c_str(),
                mib(static_cast<double>(m.max_rss_sampled)).c_str(),
                m.peak_rss ? mib(static_cast<double>(*m.peak_rss)).c_str() : "n/a");
  print_row("max RSS during the flood", text, "<= 2 x idle + KV", verdict(v.rss));
  std::snprintf(text, sizeof(text), "%s (%lld positions x %lld B)",
                mib(static_cast<double>(m.kv_positions * m.kv_bytes_per_position)).c_str(),
                static_cast<long long>(m.kv_positions),
                static_cast<long long>(m.kv_bytes_per_position));
  print_row("KV cache", text, "", "");
  print_row("RSS bound, 2 x idle + KV", mib(rss_bound(m)), "", "");
  std::snprintf(text, sizeof(text), "<= grace + 1 s = %d s", m.grace + 1);
  print_row("SIGTERM to exit", exit_text(m), text, verdict(v.sigterm));
  print_cpu(m);
}

void print_mix(const Measurements &m) {
  std::printf("\n| flood kind | slots | opened | dropped by server | connect failures | first "
              "answer status |\n|---|---:|---:|---:|---:|---|\n");
  for (int k = 0; k < kKindCount; ++k) {
    const KindTally &t = m.flood.kinds[static_cast<size_t>(k)];
    if (t.slots == 0)
      continue;
    std::printf("| %s | %d | %ld | %ld | %ld | %s |\n", kind_name(static_cast<Kind>(k)), t.slots,
                t.opens, t.dropped, t.connect_failures, answers(t.answers).c_str());
  }
  std::printf("\nflood bytes sent: %s; /health misses: %s; completion failures: %s\n",
              mib(static_cast<double>(m.flood.bytes_sent)).c_str(),
              reasons(m.health_misses).c_str(), reasons(m.completion_failures).c_str());
}

} // namespace

Verdict judge(const Measurements &m) {
  Verdict v;
  v.health =
      !m.health_ms.empty() && m.health_misses.empty() && largest(m.health_ms) <= kHealthLimitMs;
  v.completion = !m.completion_ms.empty() && m.completion_failures.empty();
  v.rss = m.idle_rss > 0 && static_cast<double>(max_rss(m)) <= rss_bound(m);
  v.sigterm = m.sigterm_s && *m.sigterm_s <= m.grace + 1.0;
  return v;
}

void print_report(const Measurements &m, const Verdict &v) {
  print_targets(m, v);
  print_mix(m);
  std::printf("\nall targets %s\n", v.all() ? "met" : "NOT met");
}

} // namespace flood
