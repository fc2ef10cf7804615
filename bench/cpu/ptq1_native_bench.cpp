// PTQ1_0 on the CPU: decode its base-3 digits in the GEMV ("native", 28
// bytes per 128 weights) or convert the rows exactly to Q2_0 once at load and
// run the 2-bit kernel ("converted", 34 bytes) -- issue 21 asks which is
// faster. Both run the plugin's AVX-512 decode tile (4 rows x 1 token,
// kernels/avx512_quant_tile.hpp) and differ only in the unpacker that turns a
// block into 128 unsigned codes: the plugin's Q2_0 one, or the PTQ1_0 one
// below. The difference is the cost of the digit decoding against the bytes
// it saves. The converted rows come from core's converter, as the host
// uploads them; the native unpack is checked against core's decoder before
// timing. The plugin keeps the converted path
// (docs/history/2026-11-23-cpu-weight-encodings.md).
#if defined(__x86_64__)

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "bonsai/core/convert.hpp"
#include "bonsai/core/formats.hpp"
#include "kernels/avx512_quant_tile.hpp"

namespace bonsai::bench {
namespace {

using cpu::avx512_tile::broadcast_f16;
constexpr int kBlock = cpu::kActBlock;

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
  BONSAI_TARGET_AVX512 static __m512 scales(const uint8_t *block) {
    return broadcast_f16(block + offsetof(BlockPTQ1_0, d));
  }
  // Bytes whose digit index is at least s, for s = 1..4.
  static constexpr uint64_t kLowAtLeast[4] = {0, ~uint64_t{0} << 16, ~uint64_t{0} << 32,
                                              ~uint64_t{0} << 48};
  BONSAI_TARGET_AVX512 static __m512i times3(__m512i q, __mmask64 where) {
    return _mm512_mask_add_epi8(q, where, q, _mm512_add_epi8(q, q));
  }
  BONSAI_TARGET_AVX512 static __m512i digits(__m512i q) {
    const __mmask64 one = _mm512_cmpge_epu8_mask(q, _mm512_set1_epi8(86));
    const __mmask64 two = _mm512_cmpge_epu8_mask(q, _mm512_set1_epi8(static_cast<char>(171)));
    return _mm512_mask_mov_epi8(_mm512_maskz_mov_epi8(one, _mm512_set1_epi8(1)), two,
                                _mm512_set1_epi8(2));
  }
  BONSAI_TARGET_AVX512 static void unpack(const uint8_t *block, __m512i &low, __m512i &high) {
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

// The unpacker's codes against core's decoder (weights -d, 0, +d: codes 0..2).
BONSAI_TARGET_AVX512 bool native_unpack_matches(const uint8_t *block) {
  __m512i low, high;
  NativePtq1::unpack(block, low, high);
  alignas(64) uint8_t codes[kBlock];
  _mm512_store_si512(codes, low);
  _mm512_store_si512(codes + 64, high);
  float values[kBlock];
  dequantize_row(GgmlType::PTQ1_0, block, values, kBlock);
  const float d = fp16_to_f32(reinterpret_cast<const BlockPTQ1_0 *>(block)->d);
  for (int e = 0; e < kBlock; ++e)
    if (codes[e] != std::lround(values[e] / d) + 1)
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
  for (int64_t i = 0; i < std::min<int64_t>(blocks * 4, 4096); ++i)
    if (!native_unpack_matches(w.native.data() + i * sizeof(BlockPTQ1_0))) {
      state.SkipWithError("native PTQ1_0 unpack disagrees with core's decoder");
      return;
    }
  // One token's activations in the plugin's block layout: 128 int8 values
  // and 16 lane scales + 16 lane corrections per block (random: the weights
  // decide the work, not the values).
  std::vector<int8_t> x(static_cast<size_t>(cols));
  std::vector<float> meta(static_cast<size_t>(blocks * cpu::kLaneMetaPerBlock));
  std::mt19937 rng(5);
  for (int8_t &v : x)
    v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  for (float &v : meta)
    v = static_cast<float>(rng() % 1000) / 1e5f;
  std::vector<float> y(static_cast<size_t>(rows));
  const size_t block_bytes = native ? sizeof(BlockPTQ1_0) : sizeof(BlockQ2_0);
  const size_t row_bytes = static_cast<size_t>(blocks) * block_bytes;
  cpu::RowJob job;
  job.type = native ? GgmlType::PTQ1_0 : GgmlType::Q2_0;
  job.w = native ? w.native.data() : w.converted.data();
  job.w_row_bytes = row_bytes;
  job.cols = cols;
  job.n_rows = rows;
  job.n_tokens = 1;
  job.q.cols = cols;
  job.q.n_blocks = blocks;
  job.q.n_tokens = 1;
  job.q.d_per_block = cpu::kLaneMetaPerBlock;
  job.q.q = x.data();
  job.q.d = meta.data();
  job.y = y.data();
  job.ldy = rows;
  for (auto _ : state) {
    for (int64_t r0 = 0; r0 < rows; r0 += cpu::avx512_tile::kTileRows)
      if (native)
        cpu::avx512_tile::tile<NativePtq1, cpu::avx512_tile::kTileRows, 1>(job, r0, 0, true);
      else
        cpu::avx512_tile::tile<cpu::avx512_tile::Q2Unpack, cpu::avx512_tile::kTileRows, 1>(job, r0,
                                                                                           0, true);
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
