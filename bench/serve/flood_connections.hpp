#pragma once
// The flood: N connections to the server, each of one kind (flood_kinds.hpp),
// driven by one thread with poll(), each reopened when the server drops it.
// Slot i connects from 127.0.0.(2 + i / per_address) so that no address
// reaches the server's per-client connection limit, and the probes from
// 127.0.0.1 are never refused for the flood's sake.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "flood_kinds.hpp"

namespace flood {

struct FloodConfig {
  int port = 0;
  int connections = 200;
  int per_address = 64;
  std::string kinds = "abcdefg";
};

struct KindTally {
  int slots = 0;
  long opens = 0;              // connections established
  long dropped = 0;            // ended by the server (end of stream or reset)
  long connect_failures = 0;   // refused, timed out or reset before established
  std::map<int, long> answers; // the first HTTP status a connection got, by status
};

struct FloodStats {
  std::vector<int> held; // established connections, sampled every 100 ms while counting
  std::array<KindTally, kKindCount> kinds;
  uint64_t bytes_sent = 0;
};

class Flood {
public:
  explicit Flood(FloodConfig config);
  ~Flood(); // stop()
  Flood(const Flood &) = delete;
  Flood &operator=(const Flood &) = delete;

  void start();
  // Turns the sampling of held connections on or off (off while the flood
  // ramps up, so that its start does not count as connections lost).
  void count_held(bool on) { counting_ = on; }
  // Stops counting opens, drops and answers (the flood goes on), so that the
  // tallies describe the flood before SIGTERM, not the shutdown.
  void freeze_tallies() { frozen_ = true; }
  // Closes every connection and ends the thread; stats() is final after it.
  void stop();
  const FloodStats &stats() const { return stats_; }

  struct Connection; // one slot

private:
  void run();
  void tend(Connection &c, std::chrono::steady_clock::time_point now,
            std::chrono::steady_clock::time_point &wake);
  void handle(Connection &c, short events, std::chrono::steady_clock::time_point now);
  void open(Connection &c, std::chrono::steady_clock::time_point now);
  void established(Connection &c, std::chrono::steady_clock::time_point now);
  void failed(Connection &c, std::chrono::steady_clock::time_point now);
  void lost(Connection &c, std::chrono::steady_clock::time_point now);
  void read_from(Connection &c, std::chrono::steady_clock::time_point now);
  void write_to(Connection &c, std::chrono::steady_clock::time_point now);
  void sample();
  KindTally &tally(const Connection &c); // a scratch tally once frozen

  FloodConfig config_;
  std::vector<Connection> slots_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> counting_{false};
  std::atomic<bool> frozen_{false};
  std::thread thread_;
  FloodStats stats_;
  KindTally scratch_; // counts nothing anyone reads
};

} // namespace flood
