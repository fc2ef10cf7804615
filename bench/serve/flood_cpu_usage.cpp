#include "flood_cpu_usage.hpp"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace flood {
namespace {

// The busy jiffies of "cpuN" lines of /proc/stat: all but idle and iowait.
double busy_seconds(const std::vector<int> &cpus) {
  std::ifstream in("/proc/stat");
  double ticks = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] == ' ')
      continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    fields >> cpu;
    if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end())
      continue;
    double value = 0;
    for (int index = 0; index < 8 && fields >> value; ++index)
      if (index != 3 && index != 4) // idle, iowait
        ticks += value;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::map<pid_t, ThreadTimes> thread_times(pid_t pid) {
  std::map<pid_t, ThreadTimes> threads;
  const std::string folder = "/proc/" + std::to_string(pid) + "/task";
  DIR *tasks = opendir(folder.c_str());
  if (tasks == nullptr)
    return threads;
  while (const dirent *entry = readdir(tasks)) {
    if (entry->d_name[0] == '.')
      continue;
    std::ifstream in(folder + "/" + entry->d_name + "/schedstat");
    double on_cpu_ns = 0, waiting_ns = 0;
    if (in >> on_cpu_ns >> waiting_ns)
      threads[std::atoi(entry->d_name)] = {on_cpu_ns / 1e9, waiting_ns / 1e9};
  }
  closedir(tasks);
  return threads;
}

} // namespace

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
    return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed))
      cpus.push_back(cpu);
  return cpus;
}

std::vector<int> pin_to_first_cpus(int count) {
  std::vector<int> cpus = allowed_cpus();
  cpus.resize(std::min(cpus.size(), static_cast<size_t>(count)));
  cpu_set_t chosen;
  CPU_ZERO(&chosen);
  for (const int cpu : cpus)
    CPU_SET(cpu, &chosen);
  if (cpus.empty() || sched_setaffinity(0, sizeof(chosen), &chosen) != 0)
    return {};
  return cpus;
}

CpuSnapshot cpu_snapshot(pid_t server, const std::vector<int> &cpus) {
  return {busy_seconds(cpus), thread_times(server)};
}

CpuUse cpu_use(const CpuSnapshot &before, const CpuSnapshot &after, double wall_s) {
  CpuUse use;
  use.wall_s = wall_s;
  use.busy_s = after.busy_s - before.busy_s;
  for (const auto &[tid, now] : after.threads) {
    const auto then = before.threads.find(tid);
    const ThreadTimes start = then == before.threads.end() ? ThreadTimes{} : then->second;
    const ThreadTimes delta{now.on_cpu_s - start.on_cpu_s, now.waiting_s - start.waiting_s};
    use.server_waiting_s += delta.waiting_s;
    if (delta.on_cpu_s > use.busiest.on_cpu_s)
      use.busiest = delta;
  }
  return use;
}

} // namespace flood
