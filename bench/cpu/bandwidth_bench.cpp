// The machine's read bandwidth, the ceiling of decode: a STREAM-like kernel
// that sums a 256 MiB buffer (8x the L3 of the development machine) split
// over N threads. Decode reads every weight once per token, so decode
// bytes/s divided by this figure is the fraction of the ceiling reached.
// Counter: read_GB/s (bytes read per second, 1 GB = 1e9 bytes).
#include <benchmark/benchmark.h>

#include "../../cli/read_bandwidth.hpp" // the loop `bonsai bench --membw` reads with

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace bonsai::bench {
namespace {

constexpr size_t kBufferBytes = size_t{256} << 20;

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
            cli::stream_sum(buffer.get() + static_cast<size_t>(t) * per_thread, per_thread);
      });
    sums[0] = cli::stream_sum(buffer.get(), per_thread);
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
