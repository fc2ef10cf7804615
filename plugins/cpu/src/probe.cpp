#include "probe.hpp"

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "cpu_features.hpp"
#include "kernels/kernel_set.hpp"

namespace bonsai::cpu {
namespace {

uint64_t total_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
             : 0;
}

// MemAvailable (what can be allocated without swapping); 0 if unknown.
uint64_t available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  std::string unit;
  while (meminfo >> key >> value) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:")
      return value * 1024;
  }
  return 0;
}

void copy_text(char *dst, size_t size, const std::string &text) {
  std::snprintf(dst, size, "%s", text.c_str());
}

} // namespace

void fill_device_info(bonsai_device_info &info) {
  const CpuFeatures &cpu = cpu_features();
  info.device_count = 1;
  copy_text(info.name, sizeof(info.name), cpu.brand);
  info.total_memory_bytes = total_memory();
  info.free_memory_bytes = available_memory();
  info.compute_major = 0;
  info.compute_minor = 0;
  const KernelSelection best = select_kernel_set(KernelChoice::Auto, cpu);
  copy_text(info.detail, sizeof(info.detail),
            "features: " + cpu.describe() + "; default kernels: " + best.set->name);
  info.preference = kCpuPreference;
}

} // namespace bonsai::cpu
