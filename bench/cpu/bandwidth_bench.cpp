// The machine's read bandwidth, the ceiling of decode: a STREAM-like kernel
// that sums a 256 MiB buffer (8x the L3 of the development machine) split
// over N threads. Decode reads every weight once per token, so decode
// bytes/s divided by this figure is the fraction of the ceiling reached.
// Counter: read_GB/s (bytes read per second, 1 GB = 1e9 bytes).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace bonsai::bench {
namespace {

constexpr size_t kBufferBytes = size_t{256} << 20;

// Eight independent sums keep enough loads in flight, and a software
// prefetch 4 KiB ahead keeps DRAM busy as the decode kernels do (without it
// this loop reads ~10 % slower than the Q2_0 decode kernel on Zen 5); the
// result is used so the reads cannot be removed.
uint64_t sum_words(const uint64_t *p, size_t n) {
  constexpr size_t kAheadWords = 4096 / sizeof(uint64_t);
  uint64_t s[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8) {
    __builtin_prefetch(p + std::min(i + kAheadWords, n - 8)); // stays inside the buffer
    for (int k = 0; k < 8; ++k)
      s[k] += p[i + k];
  }
  uint64_t total = 0;
  for (uint64_t v : s)
    total += v;
  return total;
}

void BM_ReadBandwidth(benchmark::State &state) {
  const int n_threads = static_cast<int>(state.range(0));
  const size_t n_words = kBufferBytes / sizeof(uint64_t);
  const auto buffer = std::make_unique<uint64_t[]>(n_words);
  for (size_t i = 0; i < n_words; ++i) // touch every page, non-zero data
    buffer[i] = i * 0x9E3779B97F4A7C15ull;
  const size_t per_thread = n_words / static_cast<size_t>(n_threads);
  std::vector<uint64_t> sums(static_cast<size_t>(n_threads));
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int t = 1; t < n_threads; ++t)
      threads.emplace_back([&, t] {
        sums[static_cast<size_t>(t)] =
            sum_words(buffer.get() + static_cast<size_t>(t) * per_thread, per_thread);
      });
    sums[0] = sum_words(buffer.get(), per_thread);
    for (std::thread &thread : threads)
      thread.join();
    benchmark::DoNotOptimize(sums.data());
  }
  const double bytes = static_cast<double>(per_thread * sizeof(uint64_t)) * n_threads;
  state.counters["read_GB/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * bytes / 1e9, benchmark::Counter::kIsRate);
}

BENCHMARK(BM_ReadBandwidth)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace
} // namespace bonsai::bench
