// GEMV/GEMM through the CPU plugin's matmul() on the 1.7B model's gate/up
// shape (GGUF [2048, 6144]: 2048 inputs, 6144 outputs; 1.5 MiB in Q1_0, so it
// stays in L3 and measures the kernel) and on the tied LM head / embedding
// (151,936 outputs: 40 MiB in Q1_0, read from DRAM like decode's weights)
// in Q1_0 and Q2_0.
// Counters: weight_GB/s = weight bytes read per call / time (GEMV is bound
// by it), GOP/s = 2 * rows * cols * n_tokens / time.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>

#include "bench_plugin.hpp"

namespace bonsai::bench {
namespace {

constexpr int64_t kCols = 2048;
constexpr int64_t kFfnRows = 6144;
constexpr int64_t kVocabRows = 151936;

// range(0): tokens; range(1): rows (default the gate/up shape).
void BM_Matmul(benchmark::State &state, GgmlType type, const char *kernels) {
  const int n_tokens = static_cast<int>(state.range(0));
  const int64_t rows = state.range(1);
  const bonsai_backend_api &api = cpu_plugin().api();
  test::ContextConfig config;
  config.max_batch = n_tokens;
  config.n_threads = bench_threads();
  config.options = kernels;
  test::ContextHandle ctx(api, config);

  const size_t nbytes = row_bytes(type, kCols) * rows;
  std::vector<uint8_t> weights(nbytes);
  fill_random_blocks(type, weights.data(), nbytes, 1.0 / 45.0, 7);
  bonsai_weight_desc wd{};
  wd.struct_size = sizeof(wd);
  wd.type = static_cast<uint32_t>(type);
  wd.cols = kCols;
  wd.rows = rows;
  wd.data = weights.data();
  wd.nbytes = nbytes;
  wd.flags = BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT;
  bonsai_weight *w = nullptr;
  if (api.upload_weight(ctx.get(), &wd, &w) != BONSAI_OK) {
    state.SkipWithError(ctx.last_error().c_str());
    return;
  }
  std::vector<float> x(static_cast<size_t>(n_tokens * kCols));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float &v : x)
    v = uniform(rng);
  std::vector<float> y(static_cast<size_t>(n_tokens * rows));
  bonsai_matmul_desc md{};
  md.struct_size = sizeof(md);
  md.weight = w;
  md.n_tokens = n_tokens;
  md.x = x.data();
  md.y = y.data();
  for (auto _ : state) {
    if (api.matmul(ctx.get(), &md) != BONSAI_OK) {
      state.SkipWithError(ctx.last_error().c_str());
      return;
    }
    benchmark::DoNotOptimize(y.data());
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(calls * static_cast<double>(nbytes) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GOP/s"] =
      benchmark::Counter(calls * 2.0 * rows * kCols * n_tokens / 1e9, benchmark::Counter::kIsRate);
  state.counters["threads"] = config.n_threads;
}

BENCHMARK_CAPTURE(BM_Matmul, q1_0_fast, GgmlType::Q1_0, "")
    ->Args({1, kFfnRows})
    ->Args({8, kFfnRows})
    ->Args({32, kFfnRows})
    ->Args({512, kFfnRows})
    ->Args({1, kVocabRows})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q2_0_fast, GgmlType::Q2_0, "")
    ->Args({1, kFfnRows})
    ->Args({8, kFfnRows})
    ->Args({32, kFfnRows})
    ->Args({512, kFfnRows})
    ->Args({1, kVocabRows})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q1_0_reference, GgmlType::Q1_0, "kernels=reference")
    ->Args({1, kFfnRows})
    ->Args({8, kFfnRows})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q2_0_reference, GgmlType::Q2_0, "kernels=reference")
    ->Args({1, kFfnRows})
    ->Args({8, kFfnRows})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

} // namespace
} // namespace bonsai::bench
