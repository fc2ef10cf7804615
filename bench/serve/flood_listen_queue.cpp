#include "flood_listen_queue.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace flood {

std::optional<int> accept_queue_length(int port) {
  // /proc/net/tcp writes 127.0.0.1 in host (little-endian) order and the
  // port in hex; state 0A is LISTEN, whose rx_queue is the accept queue.
  char local[32];
  std::snprintf(local, sizeof(local), "0100007F:%04X", port);
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line); // the column names
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, address, remote, state, queues;
    if (!(fields >> slot >> address >> remote >> state >> queues))
      continue;
    if (address == local && state == "0A")
      return static_cast<int>(std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16));
  }
  return std::nullopt;
}

} // namespace flood
