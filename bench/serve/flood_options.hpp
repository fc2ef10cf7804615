#pragma once
// The command line of bonsai-serve-flood.
#include <optional>
#include <string>
#include <vector>

namespace flood {

struct Options {
  std::string bonsai; // the bonsai program; empty: the one next to this tool, else $PATH
  std::string model;
  int connections = 200;
  double seconds = 20;
  int grace = 10;       // the server's --shutdown-grace
  int per_address = 64; // flood sockets per loopback source address (127.0.0.2, .3, ...)
  std::string kinds = "abcdefg";
  int cores = 2;          // CPUs the server and the tool are pinned to; 0: as started
  int kv_value_bytes = 0; // 0: 2 when the server args hold kv=f16, else 4
  double load_timeout = 300;
  std::string server_log;               // where the server's output goes; empty: a file in /tmp
  bool check = false;                   // exit status 1 when a target is missed
  std::vector<std::string> server_args; // after "--", appended to the server's command
};

// Fills `options` from argv. Returns an exit status when the program should
// stop here (0 after --help, 2 after a usage error, with the message
// printed), nullopt to go on.
std::optional<int> parse_options(int argc, char **argv, Options &options);

} // namespace flood
