#include "flood_options.hpp"

#include <cstdio>
#include <cstdlib>

namespace flood {
namespace {

constexpr const char *kUsage = R"(usage: bonsai-serve-flood -m MODEL [options] [-- SERVER ARGS...]
Starts `bonsai serve -m MODEL --port P --shutdown-grace G [SERVER ARGS]`, floods it with
slow and oversized requests, and checks that /health still answers within 1 s, that a
completion still completes, that RSS stays under 2 x idle + the KV cache, and that SIGTERM
ends the server within the grace period + 1 s.
  -m, --model FILE        GGUF model the server loads (required)
  --bonsai PATH           the bonsai program (default: next to this tool, else $PATH)
  --connections N         flood connections kept open (default 200)
  --seconds S             how long the flood runs before SIGTERM (default 20)
  --grace S               the server's --shutdown-grace (default 10)
  --per-address N         flood connections per source address 127.0.0.2, .3, ...
                          (default 64; the server allows 128 per address)
  --kinds LETTERS         the flood mix, slots dealt round robin (default abcdefg):
                          a slowloris, one header byte per second
                          b slow body, Content-Length 900000, one byte per second
                          c Content-Length 100 MB, sent as fast as the server reads
                          d chunked body that never ends, full speed
                          e Content-Encoding: gzip body (64 MiB of zeros deflated)
                          f header flood: thousands of short header lines, or (every
                            other f slot) one endless header line, full speed
                          g connect and send nothing
  --cores N               pin the server and this tool to N CPUs (default 2; 0: no pinning)
  --kv-value-bytes N      bytes per KV cache value (default 4; 2 when SERVER ARGS say kv=f16)
  --load-timeout S        how long the model may take to load (default 300)
  --server-log FILE       the server's output (default /tmp/bonsai-serve-flood-PID.log)
  --check                 exit 1 when a target is missed
)";

bool is_number_flag(const std::string &flag) {
  return flag == "--connections" || flag == "--seconds" || flag == "--grace" ||
         flag == "--per-address" || flag == "--cores" || flag == "--kv-value-bytes" ||
         flag == "--load-timeout";
}

void set_number(Options &o, const std::string &flag, const char *text) {
  const double value = std::atof(text);
  if (flag == "--seconds")
    o.seconds = value;
  else if (flag == "--load-timeout")
    o.load_timeout = value;
  else if (flag == "--connections")
    o.connections = std::atoi(text);
  else if (flag == "--grace")
    o.grace = std::atoi(text);
  else if (flag == "--per-address")
    o.per_address = std::atoi(text);
  else if (flag == "--cores")
    o.cores = std::atoi(text);
  else if (flag == "--kv-value-bytes")
    o.kv_value_bytes = std::atoi(text);
}

// Why the options cannot be used; empty when they can.
std::string problem(const Options &o) {
  if (o.model.empty())
    return "-m MODEL is required";
  if (o.connections < 0 || o.seconds <= 0 || o.grace < 0 || o.load_timeout <= 0)
    return "--connections, --grace must be >= 0; --seconds, --load-timeout > 0";
  if (o.per_address < 1 || (o.connections + o.per_address - 1) / o.per_address > 253)
    return "--per-address must be >= 1 and leave at most 253 source addresses";
  if (o.kinds.empty() || o.kinds.find_first_not_of("abcdefg") != std::string::npos)
    return "--kinds takes letters a to g";
  if (o.cores < 0 || (o.kv_value_bytes != 0 && o.kv_value_bytes != 2 && o.kv_value_bytes != 4))
    return "--cores must be >= 0 and --kv-value-bytes 2 or 4";
  return "";
}

} // namespace

std::optional<int> parse_options(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--") {
      o.server_args.assign(argv + i + 1, argv + argc);
      break;
    }
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag == "--check")
      o.check = true;
    else if ((flag == "-m" || flag == "--model") && has_value)
      o.model = argv[++i];
    else if (flag == "--bonsai" && has_value)
      o.bonsai = argv[++i];
    else if (flag == "--kinds" && has_value)
      o.kinds = argv[++i];
    else if (flag == "--server-log" && has_value)
      o.server_log = argv[++i];
    else if (is_number_flag(flag) && has_value)
      set_number(o, flag, argv[++i]);
    else {
      std::fprintf(stderr, "bonsai-serve-flood: unknown option or missing value: %s\n%s",
                   flag.c_str(), kUsage);
      return 2;
    }
  }
  if (const std::string why = problem(o); !why.empty()) {
    std::fprintf(stderr, "bonsai-serve-flood: %s\n", why.c_str());
    return 2;
  }
  return std::nullopt;
}

} // namespace flood
