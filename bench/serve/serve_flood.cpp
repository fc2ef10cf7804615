// bonsai-serve-flood: checks `bonsai serve` under a flood of slow and
// oversized requests against the targets of the server-hardening issue:
// /health answers within 1 s, a normal completion still completes, RSS stays
// under 2 x idle + the KV cache, and SIGTERM ends the server within the grace
// period + 1 s.
//
// It starts the server itself (its RSS is read from /proc, its exit timed
// with waitpid), waits for /health, runs one warm-up completion, takes the
// idle RSS (median of 10 samples) and the KV size (/metrics positions x the
// model's bytes per position), then holds the flood (flood_kinds.hpp) for
// --seconds while probing /health every 100 ms, running completions back to
// back and sampling RSS every 100 ms, all from 127.0.0.1. With the flood
// still on it sends SIGTERM and times the exit.
//
//   bonsai-serve-flood -m MODEL.gguf [--connections 200] [--seconds 20] [--check]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "flood_connections.hpp"
#include "flood_cpu_usage.hpp"
#include "flood_http.hpp"
#include "flood_kv_size.hpp"
#include "flood_listen_queue.hpp"
#include "flood_options.hpp"
#include "flood_repeater.hpp"
#include "flood_report.hpp"
#include "flood_server_process.hpp"

namespace {

using namespace flood;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr double kProbeTimeout = 5;       // a /health probe slower than this is a miss
constexpr double kCompletionTimeout = 60; // 8 tokens; far longer means the server is stuck
constexpr double kKillAfter = 10;         // past grace + 1 s: the target is missed already
const std::string kCompletion = R"({"prompt":"Hello, my name is","max_tokens":8,"temperature":0})";

std::vector<std::string> server_command(const Options &o, int port) {
  std::vector<std::string> argv = {o.bonsai.empty() ? program_next_to_self("bonsai") : o.bonsai,
                                   "serve",
                                   "-m",
                                   o.model,
                                   "--port",
                                   std::to_string(port),
                                   "--shutdown-grace",
                                   std::to_string(o.grace)};
  argv.insert(argv.end(), o.server_args.begin(), o.server_args.end());
  return argv;
}

// "HTTP 503 (the error message)", or why there was no answer.
std::string failure_reason(const HttpResult &r) {
  if (r.status == 0)
    return r.error;
  std::string message;
  const auto body = nlohmann::json::parse(r.body, nullptr, false);
  if (body.is_object() && body.contains("error") && body["error"].is_object())
    message = body["error"].value("message", "");
  return "HTTP " + std::to_string(r.status) + (message.empty() ? "" : " (" + message + ")");
}

double tool_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval &t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Room for every flood socket and the probes'.
void raise_descriptor_limit(int connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return;
  limit.rlim_cur =
      std::max<rlim_t>(limit.rlim_cur, std::min<rlim_t>(limit.rlim_max, connections + 128));
  setrlimit(RLIMIT_NOFILE, &limit);
}

void print_log_tail(const std::string &path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  const size_t from = lines.size() > 20 ? lines.size() - 20 : 0;
  std::fprintf(stderr, "--- the last lines of %s:\n", path.c_str());
  for (size_t i = from; i < lines.size(); ++i)
    std::fprintf(stderr, "%s\n", lines[i].c_str());
}

// Polls /health until it answers 200; false when the server exits first or
// `timeout_s` passes.
bool wait_until_healthy(ServerProcess &server, int port, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (Clock::now() < deadline && server.running()) {
    if (http_request(port, "GET", "/health", "", 1).status == 200)
      return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

long median_rss(const ServerProcess &server) {
  std::vector<long> samples;
  for (int i = 0; i < 10; ++i) {
    if (const auto rss = server.rss_bytes())
      samples.push_back(*rss);
    std::this_thread::sleep_for(100ms);
  }
  if (samples.empty())
    return 0;
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// The warm-up completion, idle RSS and KV size; false when the server does
// not answer as it should.
bool measure_idle(const Options &o, int port, const ServerProcess &server, Measurements &m) {
  const HttpResult warm = http_request(port, "POST", "/v1/completions", kCompletion, 120);
  if (warm.status != 200) {
    std::fprintf(stderr, "bonsai-serve-flood: the warm-up completion failed: %s %s\n",
                 failure_reason(warm).c_str(), warm.body.c_str());
    return false;
  }
  m.idle_rss = median_rss(server);
  const auto positions = metric_value(http_request(port, "GET", "/metrics", "", 10).body,
                                      "bonsai_kv_capacity_positions");
  if (!positions) {
    std::fprintf(stderr, "bonsai-serve-flood: /metrics has no bonsai_kv_capacity_positions\n");
    return false;
  }
  m.kv_positions = static_cast<int64_t>(*positions);
  std::string joined;
  for (const std::string &arg : o.server_args)
    joined += arg + " ";
  m.kv_bytes_per_position = kv_bytes_per_position(
      o.model, o.kv_value_bytes != 0 ? o.kv_value_bytes : kv_value_bytes(joined));
  return true;
}

// Waits out the flood; held connections are counted after a ramp of up to
// 1 s. False when the server exits meanwhile.
bool hold_flood(double seconds, ServerProcess &server, Flood &flood) {
  const auto start = Clock::now();
  const auto ramp = std::chrono::duration<double>(std::min(1.0, seconds / 4));
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  bool alive = true;
  while (Clock::now() < end && (alive = server.running())) {
    if (Clock::now() - start >= ramp)
      flood.count_held(true);
    std::this_thread::sleep_until(std::min<Clock::time_point>(Clock::now() + 100ms, end));
  }
  flood.count_held(false);
  return alive;
}

// /health every 100 ms, completions back to back, and the server's RSS and
// accept queue every 100 ms, each on its own thread, so that a slow answer
// delays only its own kind.
class Probes {
public:
  Probes(int port, const ServerProcess &server, Measurements &m)
      : health_(100ms,
                [port, &m] {
                  const HttpResult r = http_request(port, "GET", "/health", "", kProbeTimeout);
                  if (r.status == 200)
                    m.health_ms.push_back(r.ms);
                  else
                    ++m.health_misses[failure_reason(r)];
                }),
        completions_(0ms,
                     [port, &m] {
                       const HttpResult r = http_request(port, "POST", "/v1/completions",
                                                         kCompletion, kCompletionTimeout);
                       if (r.status == 200)
                         m.completion_ms.push_back(r.ms);
                       else
                         ++m.completion_failures[failure_reason(r)];
                     }),
        server_(100ms, [port, &server, &m] {
          m.max_rss_sampled = std::max(m.max_rss_sampled, server.rss_bytes().value_or(0));
          if (const auto queued = accept_queue_length(port))
            m.accept_queue.push_back(*queued);
        }) {}

  void stop() {
    completions_.stop(); // the one in flight finishes: the signal does not cut it
    health_.stop();
    server_.stop();
  }

private:
  Repeater health_, completions_, server_;
};

void measure_flood(const Options &o, int port, ServerProcess &server, Measurements &m) {
  Flood flood({port, o.connections, o.per_address, o.kinds});
  const bool peak_reset = server.reset_peak_rss();
  const double server_cpu = server.cpu_seconds(), tool_cpu = tool_cpu_seconds();
  const CpuSnapshot cpu = cpu_snapshot(server.pid(), m.cpus);
  const auto start = Clock::now();
  flood.start();
  Probes probes(port, server, m);
  m.gone_before_signal = !hold_flood(o.seconds, server, flood);
  m.cpu = cpu_use(cpu, cpu_snapshot(server.pid(), m.cpus),
                  std::chrono::duration<double>(Clock::now() - start).count());
  m.server_cpu_s = server.cpu_seconds() - server_cpu;
  m.tool_cpu_s = tool_cpu_seconds() - tool_cpu;
  probes.stop();
  flood.freeze_tallies();
  if (peak_reset)
    m.peak_rss = server.peak_rss_bytes();
  m.sigterm_s = server.terminate(o.grace + 1.0 + kKillAfter);
  m.exit_status = server.exit_status();
  flood.stop();
  m.flood = flood.stats();
}

int run(const Options &o) {
  raise_descriptor_limit(o.connections);
  Measurements m;
  m.cpus = o.cores > 0 ? pin_to_first_cpus(o.cores) : allowed_cpus();
  if (o.cores > 0 && m.cpus.empty())
    throw std::runtime_error("cannot pin to " + std::to_string(o.cores) + " CPUs");
  const int port = free_port();
  const std::vector<std::string> argv = server_command(o, port);
  const std::string log = o.server_log.empty()
                              ? "/tmp/bonsai-serve-flood-" + std::to_string(getpid()) + ".log"
                              : o.server_log;
  std::printf("server: `%s` (output in %s)\n\n", shell_line(argv).c_str(), log.c_str());
  std::fflush(stdout);
  ServerProcess server(argv, log);
  m.connections = o.connections;
  m.seconds = o.seconds;
  m.grace = o.grace;
  if (!wait_until_healthy(server, port, o.load_timeout) || !measure_idle(o, port, server, m)) {
    std::fprintf(stderr, "bonsai-serve-flood: the server did not become ready and answer\n");
    print_log_tail(log);
    return 1;
  }
  std::fprintf(stderr, "bonsai-serve-flood: ready; flooding with %d connections for %.0f s\n",
               o.connections, o.seconds);
  measure_flood(o, port, server, m);
  const Verdict verdict = judge(m);
  print_report(m, verdict);
  return o.check && !verdict.all() ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  if (const auto status = parse_options(argc, argv, options))
    return *status;
  try {
    return run(options);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "bonsai-serve-flood: %s\n", error.what());
    return 1;
  }
}
