#include "read_bandwidth.hpp"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace bonsai::cli {

uint64_t stream_sum(const uint64_t *words, size_t n) {
  constexpr size_t kAheadWords = 4096 / sizeof(uint64_t);
  uint64_t s[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __builtin_prefetch(words + std::min(i + kAheadWords, n - 8)); // stays inside the slice
    for (int k = 0; k < 8; ++k)
      s[k] += words[i + k];
  }
  for (; i < n; ++i)
    s[0] += words[i];
  uint64_t total = 0;
  for (const uint64_t v : s)
    total += v;
  return total;
}

double measure_read_bandwidth(const ReadBandwidthRun &run) {
  const int threads = std::max(run.threads, 1);
  const size_t n_words = run.bytes / sizeof(uint64_t);
  // Distinct non-zero words: untouched or all-zero pages could be served by
  // the kernel's shared zero page, which stays in cache and reads far too fast.
  std::vector<uint64_t> buffer(n_words);
  for (size_t i = 0; i < n_words; ++i)
    buffer[i] = i * 0x9E3779B97F4A7C15ull + 1;
  // This thread is reader 0: a thread that only waited for the readers would
  // share a core with one of them when there are as many readers as cores.
  std::barrier sync(threads);
  std::vector<uint64_t> sums(static_cast<size_t>(threads)); // one per reader: no shared writes
  const int rounds = std::max(run.passes, 1) + 1; // the first warms TLBs and caches' state
  // Each reader stamps its own start and end: the pass lasts from the first
  // start to the last end.
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> starts(static_cast<size_t>(threads));
  std::vector<Clock::time_point> ends(static_cast<size_t>(threads));
  std::vector<double> rates;
  const auto read_passes = [&](int t) {
    const size_t first = n_words * t / threads, last = n_words * (t + 1) / threads;
    for (int round = 0; round < rounds; ++round) {
      sync.arrive_and_wait();
      starts[static_cast<size_t>(t)] = Clock::now();
      sums[static_cast<size_t>(t)] += stream_sum(buffer.data() + first, last - first);
      ends[static_cast<size_t>(t)] = Clock::now();
      sync.arrive_and_wait(); // every reader has stamped this pass
      if (t == 0 && round > 0) {
        const double seconds =
            std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) -
                                          *std::min_element(starts.begin(), starts.end()))
                .count();
        rates.push_back(static_cast<double>(n_words * sizeof(uint64_t)) / seconds);
      }
    }
  };
  std::vector<std::jthread> readers;
  for (int t = 1; t < threads; ++t)
    readers.emplace_back(read_passes, t);
  read_passes(0);
  readers.clear();             // joined: their sums are complete
  volatile uint64_t total = 0; // used, so the reads cannot be dropped
  for (const uint64_t sum : sums)
    total = total + sum;
  return *std::max_element(rates.begin(), rates.end());
}

} // namespace bonsai::cli
