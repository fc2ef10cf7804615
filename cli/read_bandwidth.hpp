#pragma once
// The machine's streaming read bandwidth, as `bonsai bench --membw` states
// decode against it: the bytes a decode step must read, divided by this, is
// the fastest that step can be.
#include <cstddef>
#include <cstdint>

namespace bonsai::cli {

struct ReadBandwidthRun {
  int threads = 1;                  // readers, each streaming its own slice
  size_t bytes = size_t{256} << 20; // buffer size: far past any last-level cache
  int passes = 9;                   // timed passes after one untimed
};

// The fastest of the timed passes, in bytes per second: a ceiling, and on a
// shared machine (a VM whose neighbours use the same memory) a slow pass
// says that the neighbours were busy, not what the memory can do; with the
// median, decode was measured at up to 101 % of its "limit".
// Throws std::bad_alloc.
double measure_read_bandwidth(const ReadBandwidthRun &run);

// Sums n words, as fast as one core reads them: eight independent sums, so
// the loads and not the adds set the pace, and a software prefetch 4 KiB
// ahead, as the decode kernels do (without it this loop read ~10 % slower
// than the Q2_0 decode kernel on Zen 5). Shared with bench_cpu_kernels.
uint64_t stream_sum(const uint64_t *words, size_t n);

} // namespace bonsai::cli
