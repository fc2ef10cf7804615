// PTQ1_0 on the CPU: decode its base-3 digits in the GEMV ("native", 28
// bytes per 128 weights) or convert the rows exactly to Q2_0 once at load and
// run the 2-bit kernel ("converted", 34 bytes) -- issue 21 asks which is
// faster. Both GEMVs here share one loop (4 rows x 1 token, int8 activations
// with a scale and a correction per lane, as the plugin's AVX-512 decode
// tile) and differ only in how a block becomes 128 unsigned codes, so the
// difference is the cost of the digit decoding against the bytes it saves.
// The converted rows come from core's converter, as the host uploads them.
// The native unpack is checked against the format's definition before
// timing. The plugin keeps the converted path (docs/performance.md).
#if defined(__x86_64__)

#include <benchmark/benchmark.h>
// GCC 12's AVX-512 headers trip these on their own helpers (GCC bug 105593;
// plugins/cpu/src/kernels/avx512_intrinsics.hpp does the same).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "bonsai/core/convert.hpp"
#include "bonsai/core/formats.hpp"

namespace bonsai::bench {
namespace {

#define PTQ1_BENCH_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma,f16c")))

constexpr int kRows = 4;
constexpr int kBlock = 128;

PTQ1_BENCH_TARGET inline __m512 broadcast_f16(const uint8_t *p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(bits)));
}

// Q2_0 (the plugin's unpack): the 32 code bytes in both 256-bit halves,
// codes k = 0, 1 to the low register and 2, 3 to the high one.
struct ConvertedQ2 {
  static constexpr size_t kBytes = sizeof(BlockQ2_0);
  PTQ1_BENCH_TARGET static __m512 scale(const uint8_t *block) { return broadcast_f16(block); }
  PTQ1_BENCH_TARGET static void unpack(const uint8_t *block, __m512i &low, __m512i &high) {
    const __m512i packed =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(block + 2)));
    const __m512i mask = _mm512_set1_epi8(3);
    low =
        _mm512_and_si512(_mm512_srlv_epi64(packed, _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0)), mask);
    high =
        _mm512_and_si512(_mm512_srlv_epi64(packed, _mm512_set_epi64(6, 6, 6, 6, 4, 4, 4, 4)), mask);
  }
};

// The high register's digit index per byte: lane 0 all 4; lane 1: 0 x 8,
// 1 x 8; lane 2: 2 x 8, 3 x 8; lane 3: 4 x 8, then 0 0 1 1 2 2 3 3.
constexpr int high_digit(int i) {
  const int lane = i / 16, j = i % 16;
  if (lane == 0)
    return 4;
  if (lane == 1)
    return j / 8;
  if (lane == 2)
    return 2 + j / 8;
  return j < 8 ? 4 : (j - 8) / 2;
}
constexpr uint64_t high_at_least(int s) {
  uint64_t m = 0;
  for (int i = 0; i < 64; ++i)
    if (high_digit(i) >= s)
      m |= uint64_t{1} << i;
  return m;
}

// PTQ1_0 natively, elements in natural order (low: 0..63, high: 64..127).
// Each byte position gets its source byte (128-bit lane k of the low register
// is digit k of qs[0..15]; the high register holds digit 4 of qs[0..15], then
// digits of qs[16..23] and qh), is multiplied by 3^n modulo 256 with masked
// byte adds (x + 2x per step), and the digit is [q >= 86] + [q >= 171], which
// is ((q * 3) >> 8) for a byte q.
struct NativePtq1 {
  static constexpr size_t kBytes = sizeof(BlockPTQ1_0);
  PTQ1_BENCH_TARGET static __m512 scale(const uint8_t *block) {
    return broadcast_f16(block + offsetof(BlockPTQ1_0, d));
  }
  // Bytes whose digit index is at least s, for s = 1..4.
  static constexpr uint64_t kLowAtLeast[4] = {0, ~uint64_t{0} << 16, ~uint64_t{0} << 32,
                                              ~uint64_t{0} << 48};
  PTQ1_BENCH_TARGET static __m512i times3(__m512i q, __mmask64 where) {
    return _mm512_mask_add_epi8(q, where, q, _mm512_add_epi8(q, q));
  }
  PTQ1_BENCH_TARGET static __m512i digits(__m512i q) {
    const __mmask64 one = _mm512_cmpge_epu8_mask(q, _mm512_set1_epi8(86));
    const __mmask64 two = _mm512_cmpge_epu8_mask(q, _mm512_set1_epi8(static_cast<char>(171)));
    return _mm512_mask_mov_epi8(_mm512_maskz_mov_epi8(one, _mm512_set1_epi8(1)), two,
                                _mm512_set1_epi8(2));
  }
  PTQ1_BENCH_TARGET static void unpack(const uint8_t *block, __m512i &low, __m512i &high) {
    const __m512i qs =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i *>(block)));
    // Lanes 1..3 of `tail`: bytes 10..25 (qs[10..23], qh[0..1]).
    const __m512i tail = _mm512_mask_broadcast_i32x4(
        qs, 0xFFF0, _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 10)));
    // Lane 0: qs[0..15]; lanes 1, 2: qs[16..23] twice; lane 3: qs[16..23], then qh0 qh1 x 4.
    const __m512i pick =
        _mm512_set_epi8(15, 14, 15, 14, 15, 14, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, //
                        13, 12, 11, 10, 9, 8, 7, 6, 13, 12, 11, 10, 9, 8, 7, 6,     //
                        13, 12, 11, 10, 9, 8, 7, 6, 13, 12, 11, 10, 9, 8, 7, 6,     //
                        15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    __m512i lo = qs, hi = _mm512_shuffle_epi8(tail, pick);
    lo = times3(lo, kLowAtLeast[1]);
    lo = times3(lo, kLowAtLeast[2]);
    lo = times3(lo, kLowAtLeast[3]);
    hi = times3(hi, kHighAtLeast[1]);
    hi = times3(hi, kHighAtLeast[2]);
    hi = times3(hi, kHighAtLeast[3]);
    hi = times3(hi, kHighAtLeast[4]);
    low = digits(lo);
    high = digits(hi);
  }
  static constexpr uint64_t kHighAtLeast[5] = {0, high_at_least(1), high_at_least(2),
                                               high_at_least(3), high_at_least(4)};
};

// y[r] for rows [0, rows) of one token: the plugin's decode arithmetic,
// acc += d_w * (scale_lane * S - correction_lane) per block.
template <class Unpack>
PTQ1_BENCH_TARGET void gemv(const uint8_t *w, size_t row_bytes, int64_t rows, int64_t blocks,
                            const int8_t *x, const float *meta, float *y) {
  for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
    __m512 acc[kRows];
    for (int r = 0; r < kRows; ++r)
      acc[r] = _mm512_setzero_ps();
    // The plugin's decode prefetch: one group (or 4 KiB) ahead.
    const size_t step = kRows * Unpack::kBytes;
    const uintptr_t stream = reinterpret_cast<uintptr_t>(w + static_cast<size_t>(r0) * row_bytes) +
                             std::max<size_t>(4096, step * static_cast<size_t>(blocks));
    for (int64_t b = 0; b < blocks; ++b) {
      for (size_t line = 0; line < step + 64; line += 64)
        _mm_prefetch(reinterpret_cast<const char *>(stream + static_cast<size_t>(b) * step + line),
                     _MM_HINT_T0);
      const __m512i x_low = _mm512_loadu_si512(x + b * kBlock);
      const __m512i x_high = _mm512_loadu_si512(x + b * kBlock + 64);
      const __m512 scale = _mm512_loadu_ps(meta + b * 32);
      const __m512 correction = _mm512_loadu_ps(meta + b * 32 + 16);
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        const uint8_t *block =
            w + static_cast<size_t>(r0 + r) * row_bytes + static_cast<size_t>(b) * Unpack::kBytes;
        __m512i low, high;
        Unpack::unpack(block, low, high);
        __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), low, x_low);
        sums = _mm512_dpbusd_epi32(sums, high, x_high);
        const __m512 terms = _mm512_fmsub_ps(_mm512_cvtepi32_ps(sums), scale, correction);
        acc[r] = _mm512_fmadd_ps(terms, Unpack::scale(block), acc[r]);
      }
    }
    for (int r = 0; r < kRows; ++r)
      y[r0 + r] = _mm512_reduce_add_ps(acc[r]);
  }
}

// Digit n of byte b as the format defines it.
int reference_digit(uint8_t b, int n) {
  unsigned q = b;
  for (int i = 0; i < n; ++i)
    q = (q * 3) & 0xFF;
  return static_cast<int>((q * 3) >> 8);
}
int reference_code(const BlockPTQ1_0 &block, int e) {
  if (e < 80)
    return reference_digit(block.qs[e % 16], e / 16);
  if (e < 120)
    return reference_digit(block.qs[16 + (e - 80) % 8], (e - 80) / 8);
  return reference_digit(block.qh[(e - 120) % 2], (e - 120) / 2);
}

PTQ1_BENCH_TARGET bool native_unpack_matches(const BlockPTQ1_0 &block) {
  __m512i low, high;
  NativePtq1::unpack(reinterpret_cast<const uint8_t *>(&block), low, high);
  alignas(64) uint8_t codes[kBlock];
  _mm512_store_si512(codes, low);
  _mm512_store_si512(codes + 64, high);
  for (int e = 0; e < kBlock; ++e)
    if (codes[e] != reference_code(block, e))
      return false;
  return true;
}

struct Ptq1Rows {
  std::vector<uint8_t> native;    // PTQ1_0
  std::vector<uint8_t> converted; // the same rows as Q2_0
};

Ptq1Rows random_rows(int64_t rows, int64_t cols) {
  const int64_t blocks = cols / kBlock;
  Ptq1Rows out;
  out.native.resize(static_cast<size_t>(rows * blocks) * sizeof(BlockPTQ1_0));
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 242); // every 5-digit value
  const uint16_t d = f32_to_fp16(1.0f / 45.0f);
  for (size_t at = 0; at < out.native.size(); at += sizeof(BlockPTQ1_0)) {
    BlockPTQ1_0 block{};
    for (uint8_t &b : block.qs)
      b = static_cast<uint8_t>(byte(rng));
    for (uint8_t &b : block.qh)
      b = static_cast<uint8_t>(byte(rng));
    block.d = d;
    std::memcpy(out.native.data() + at, &block, sizeof(block));
  }
  out.converted.resize(static_cast<size_t>(rows * blocks) * sizeof(BlockQ2_0));
  convert_rows(GgmlType::PTQ1_0, GgmlType::Q2_0, out.native.data(), out.converted.data(), cols,
               rows, "random PTQ1_0 rows");
  return out;
}

// range(0): rows, range(1): columns. `native` picks the encoding read.
void BM_Ptq1Gemv(benchmark::State &state, bool native) {
  if (!__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vnni")) {
    state.SkipWithError("skipped: this CPU lacks AVX-512 BW/VNNI");
    return;
  }
  const int64_t rows = state.range(0), cols = state.range(1), blocks = cols / kBlock;
  const Ptq1Rows w = random_rows(rows, cols);
  for (int64_t i = 0; i < std::min<int64_t>(blocks * 4, 4096); ++i) {
    BlockPTQ1_0 block;
    std::memcpy(&block, w.native.data() + i * sizeof(block), sizeof(block));
    if (!native_unpack_matches(block)) {
      state.SkipWithError("native PTQ1_0 unpack disagrees with the format's digits");
      return;
    }
  }
  std::vector<int8_t> x(static_cast<size_t>(cols));
  std::vector<float> meta(static_cast<size_t>(blocks * 32));
  std::mt19937 rng(5);
  for (int8_t &v : x)
    v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  for (float &v : meta)
    v = static_cast<float>(rng() % 1000) / 1e5f;
  std::vector<float> y(static_cast<size_t>(rows));
  const uint8_t *bytes = native ? w.native.data() : w.converted.data();
  const size_t block_bytes = native ? sizeof(BlockPTQ1_0) : sizeof(BlockQ2_0);
  const size_t row_bytes = static_cast<size_t>(blocks) * block_bytes;
  for (auto _ : state) {
    if (native)
      gemv<NativePtq1>(bytes, row_bytes, rows, blocks, x.data(), meta.data(), y.data());
    else
      gemv<ConvertedQ2>(bytes, row_bytes, rows, blocks, x.data(), meta.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(calls * static_cast<double>(row_bytes * static_cast<size_t>(rows)) / 1e9,
                         benchmark::Counter::kIsRate);
}

// The 1.7B FFN shape (in L2/L3) and the tied head (from DRAM), one thread.
BENCHMARK_CAPTURE(BM_Ptq1Gemv, converted_q2_0, false)
    ->Args({6144, 2048})
    ->Args({151936, 2048})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Ptq1Gemv, native_ptq1_0, true)
    ->Args({6144, 2048})
    ->Args({151936, 2048})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

} // namespace
} // namespace bonsai::bench

#endif
