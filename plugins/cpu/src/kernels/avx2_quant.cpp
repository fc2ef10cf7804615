// AVX2 kernels for the quantized weight types against int8 activations
// (activations.hpp). Each weight row is processed for a tile of tokens at a
// time so a weight block is unpacked once per tile. Per token the arithmetic
// is the same whatever the tile size, so results never depend on how tokens
// are grouped.
#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>

#include "kernels/simd_kernels.hpp"
#include "kernels/x86_helpers.hpp"

namespace bonsai::cpu {
namespace {

// Tokens per tile: Q1_0/Q2_0 unpack a block once for 8 tokens (8
// accumulators + 4 unpacked chunks: nearly all 16 ymm registers, a few
// accumulators live in L1); Q8_0 (no unpacking to share) uses 4.
constexpr int kQuantTile = 8;
constexpr int kTokenTile = 4;
constexpr size_t kQ8Bytes = sizeof(BlockQ8_0);
// Rows a single token (decode) reads at a time, prefetching ahead
// (quant_rows): 4 measured 4-6 % above one row without a prefetch
// (docs/history/2026-11-26-cpu-round-3-avx2.md).
constexpr int kDecodeRows = 4;

#define BONSAI_QUANT_TARGET BONSAI_TARGET_AVX2
#define BONSAI_QUANT_VNNI 0
#include "kernels/avx2_quant_tile.hpp"

// Q8_0 weights (32-value blocks, natural activation order): int32 lane j of
// weight block g covers values 32g + 4j.. of sub-block 2g + j / 4.
template <int NT> BONSAI_TARGET_AVX2 void q8_tile(const RowJob &job, int t0) {
  const int64_t n_blocks = job.cols / kActBlock;
  constexpr int kPerBlock = kActBlock / kQ8BlockSize;
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    __m256 acc[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      for (int g = 0; g < kPerBlock; ++g) {
        const uint8_t *block = row + static_cast<size_t>(b * kPerBlock + g) * kQ8Bytes;
        const float dw = load_f16(block);
        const __m256i w = load256(block + 2);
        const __m256i w_abs = _mm256_sign_epi8(w, w);
        const __m256i pick = _mm256_setr_epi32(2 * g, 2 * g, 2 * g, 2 * g, 2 * g + 1, 2 * g + 1,
                                               2 * g + 1, 2 * g + 1);
#pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) {
          const int8_t *xq = job.q.q_block(t0 + t, b) + g * kQ8BlockSize;
          // |w| * (x with w's sign) = w * x; |pair| <= 2 * 128 * 127 < 2^15.
          const __m256i prod = _mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(load256(xq), w));
          const __m256i sums = _mm256_madd_epi16(prod, _mm256_set1_epi16(1));
          const __m256 scales =
              _mm256_permutevar8x32_ps(_mm256_loadu_ps(job.q.d_block(t0 + t, b)), pick);
          acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(sums), scales),
                                   _mm256_set1_ps(dw), acc[t]);
        }
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      job.y[static_cast<int64_t>(t0 + t) * job.ldy + r] = hsum256(acc[t]);
  }
}

} // namespace

void avx2_rows_q1(const RowJob &job) {
  run_tiles<quant_tile<Q1Unpack, kQuantTile>, quant_rows<Q1Unpack, kDecodeRows>, kQuantTile>(job);
}
void avx2_rows_q2(const RowJob &job) {
  run_tiles<quant_tile<Q2Unpack, kQuantTile>, quant_rows<Q2Unpack, kDecodeRows>, kQuantTile>(job);
}
void avx2_rows_q2_g64(const RowJob &job) {
  run_tiles<q2_g64_tile<kTokenTile>, q2_g64_tile<1>, kTokenTile>(job);
}
void avx2_rows_q8(const RowJob &job) {
  run_tiles<q8_tile<kTokenTile>, q8_tile<1>, kTokenTile>(job);
}

} // namespace bonsai::cpu

#endif
