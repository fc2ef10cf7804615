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
  std::vector<uint64_t> buffer(n_words); // zeroed: every page is touched before timing
  std::barrier sync(threads + 1);        // the readers and this thread, at each pass's ends
  std::vector<uint64_t> sums(static_cast<size_t>(threads)); // one per reader: no shared writes
  const int rounds = run.passes + 1; // the first warms TLBs and caches' state
  std::vector<std::jthread> readers;
  for (int t = 0; t < threads; ++t)
    readers.emplace_back([&, t] {
      const size_t first = n_words * t / threads, last = n_words * (t + 1) / threads;
      for (int round = 0; round < rounds; ++round) {
        sync.arrive_and_wait();
        sums[static_cast<size_t>(t)] += sum_words(buffer.data() + first, last - first);
        sync.arrive_and_wait();
      }
    });
  std::vector<double> rates;
  for (int round = 0; round < rounds; ++round) {
    sync.arrive_and_wait();
    const auto start = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
