#include "read_bandwidth.hpp"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace bonsai::cli {
namespace {

// Sums a slice with four independent accumulators, so the loads, not the
// adds, set the pace.
uint64_t sum_words(const uint64_t *words, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += words[i];
    b += words[i + 1];
    c += words[i + 2];
    d += words[i + 3];
  }
  for (; i < n; ++i)
    a += words[i];
  return a + b + c + d;
}

} // namespace

double measure_read_bandwidth(const ReadBandwidthRun &run) {
  const int threads = std::max(run.threads, 1);
  const size_t n_words = run.bytes / sizeof(uint64_t);
  // Distinct non-zero words: untouched or all-zero pages could be served by
  // the kernel's shared zero page, which stays in cache and reads far too fast.
  std::vector<uint64_t> buffer(n_words);
  for (size_t i = 0; i < n_words; ++i)
    buffer[i] = i * 0x9E3779B97F4A7C15ull + 1;
  std::barrier sync(threads + 1); // the readers and this thread, at each pass's ends
  std::vector<uint64_t> sums(static_cast<size_t>(threads)); // one per reader: no shared writes
  const int rounds = run.passes + 1; // the first warms TLBs and caches' state
  // Each reader stamps its own start and end: the pass lasts from the first
  // start to the last end (this thread may not run at once when woken, so
  // its own clock would cut passes short).
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> starts(static_cast<size_t>(threads));
  std::vector<Clock::time_point> ends(static_cast<size_t>(threads));
  std::vector<std::jthread> readers;
  for (int t = 0; t < threads; ++t)
    readers.emplace_back([&, t] {
      const size_t first = n_words * t / threads, last = n_words * (t + 1) / threads;
      for (int round = 0; round < rounds; ++round) {
        sync.arrive_and_wait();
        starts[static_cast<size_t>(t)] = Clock::now();
        sums[static_cast<size_t>(t)] += sum_words(buffer.data() + first, last - first);
        ends[static_cast<size_t>(t)] = Clock::now();
        sync.arrive_and_wait();
      }
    });
  std::vector<double> rates;
  for (int round = 0; round < rounds; ++round) {
    sync.arrive_and_wait();
    sync.arrive_and_wait(); // every reader has stamped this pass
    const double seconds =
        std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) -
                                      *std::min_element(starts.begin(), starts.end()))
            .count();
    if (round > 0)
      rates.push_back(static_cast<double>(n_words * sizeof(uint64_t)) / seconds);
  }
  readers.clear();             // joined: their sums are complete
  volatile uint64_t total = 0; // used, so the reads cannot be dropped
  for (const uint64_t sum : sums)
    total = total + sum;
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

} // namespace bonsai::cli
