// GEMV/GEMM through the CPU plugin's matmul() on the 1.7B model's gate/up
// shape (GGUF [2048, 6144]: 2048 inputs, 6144 outputs; 1.5 MiB in Q1_0, so it
// stays in L3 and measures the kernel) and on the tied LM head / embedding
// (151,936 outputs: 40 MiB in Q1_0, read from DRAM like decode's weights)
// in Q1_0, Q2_0 and mainline Q2_0 (group 64), on the square attention shape (2,048 x 2,048:
// 0.56 MiB in Q1_0, inside one core's 1 MiB L2, so one thread measures the kernel alone), and on
// two decode shapes of the 8B model too large for the caches (4,096 and 12,288 inputs: the long
// rows of the 8B down projection are where a prefetch that runs ahead of one row falls behind the
// next three). Counters: weight_GB/s = weight bytes read per call / time (GEMV is bound by it),
// GOP/s = 2 * rows * cols * n_tokens / time.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "bench_plugin.hpp"

namespace bonsai::bench {
namespace {

constexpr int64_t kCols = 2048;
constexpr int64_t kFfnRows = 6144;
constexpr int64_t kVocabRows = 151936;
// 36 MiB of Q1_0 at 4,096 inputs: more than the 32 MiB L3.
constexpr int64_t kBigRows = 65536;

// range(0): tokens; range(1): rows; range(2): columns (inputs).
void BM_Matmul(benchmark::State &state, GgmlType type, const char *kernels) {
  const int n_tokens = static_cast<int>(state.range(0));
  const int64_t rows = state.range(1);
  const int64_t cols = state.range(2);
  const bonsai_backend_api &api = cpu_plugin().api();
  test::ContextConfig config;
  config.max_batch = n_tokens;
  config.n_threads = bench_threads();
  config.options = kernels;
  test::ContextHandle ctx(api, config);

  const size_t nbytes = row_bytes(type, cols) * rows;
  std::vector<uint8_t> weights(nbytes);
  fill_random_blocks(type, weights.data(), nbytes, 1.0 / 45.0, 7);
  bonsai_weight_desc wd{};
  wd.struct_size = sizeof(wd);
  wd.type = static_cast<uint32_t>(type);
  wd.cols = cols;
  wd.rows = rows;
  wd.data = weights.data();
  wd.nbytes = nbytes;
  wd.flags = BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT;
  bonsai_weight *w = nullptr;
  if (api.upload_weight(ctx.get(), &wd, &w) != BONSAI_OK) {
    state.SkipWithError(ctx.last_error().c_str());
    return;
  }
  std::vector<float> x(static_cast<size_t>(n_tokens * cols));
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
      benchmark::Counter(calls * 2.0 * rows * cols * n_tokens / 1e9, benchmark::Counter::kIsRate);
  state.counters["threads"] = config.n_threads;
}

// Token counts and shapes for the fast kernels of every type.
void fast_kernel_shapes(benchmark::internal::Benchmark *b) {
  b->Args({1, kCols, kCols})
      ->Args({1, kFfnRows, kCols})
      ->Args({8, kFfnRows, kCols})
      ->Args({32, kFfnRows, kCols})
      ->Args({512, kFfnRows, kCols})
      ->Args({1, kVocabRows, kCols})
      ->Args({1, kBigRows, 4096})
      ->Args({1, kBigRows / 3, 12288});
}

BENCHMARK_CAPTURE(BM_Matmul, q1_0_fast, GgmlType::Q1_0, "")
    ->Apply(fast_kernel_shapes)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q2_0_fast, GgmlType::Q2_0, "")
    ->Apply(fast_kernel_shapes)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q2_0_g64_fast, GgmlType::Q2_0_G64, "")
    ->Apply(fast_kernel_shapes)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q1_0_reference, GgmlType::Q1_0, "kernels=reference")
    ->Args({1, kFfnRows, kCols})
    ->Args({8, kFfnRows, kCols})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q2_0_reference, GgmlType::Q2_0, "kernels=reference")
    ->Args({1, kFfnRows, kCols})
    ->Args({8, kFfnRows, kCols})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

} // namespace
} // namespace bonsai::bench
