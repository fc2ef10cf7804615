#pragma once
// Where the CPU time went during the flood, to tell a slow server from one
// that waited for a CPU: the busy time of the CPUs the run is pinned to (all
// processes, from /proc/stat) and the time each server thread spent on a CPU
// and runnable but waiting for one (/proc/PID/task/TID/schedstat).
#include <sys/types.h>

#include <map>
#include <vector>

namespace flood {

struct ThreadTimes {
  double on_cpu_s = 0;
  double waiting_s = 0; // runnable, waiting for a CPU
};

struct CpuSnapshot {
  double busy_s = 0;                    // the CPUs' busy time, all processes
  std::map<pid_t, ThreadTimes> threads; // the server's threads
};

struct CpuUse {
  double wall_s = 0;
  double busy_s = 0;           // of cpus x wall_s
  double server_waiting_s = 0; // all server threads together
  ThreadTimes busiest;         // the server thread with the most CPU time
};

// The CPUs this process may run on.
std::vector<int> allowed_cpus();
// Pins this process, and the server it starts later, to the first `count`
// allowed CPUs; returns them (empty when it could not).
std::vector<int> pin_to_first_cpus(int count);

CpuSnapshot cpu_snapshot(pid_t server, const std::vector<int> &cpus);
CpuUse cpu_use(const CpuSnapshot &before, const CpuSnapshot &after, double wall_s);

} // namespace flood
