#pragma once
// The machine's streaming read bandwidth, as `bonsai bench --membw` states
// decode against it: the bytes a decode step must read, divided by this, is
// the fastest that step can be.
#include <cstddef>

namespace bonsai::cli {

struct ReadBandwidthRun {
  int threads = 1;                  // readers, each streaming its own slice
  size_t bytes = size_t{256} << 20; // buffer size: far past any last-level cache
  int passes = 5;                   // timed passes after one untimed
};

// Median bytes per second over the timed passes. Throws std::bad_alloc.
double measure_read_bandwidth(const ReadBandwidthRun &run);

} // namespace bonsai::cli
