// AVX2 kernels for the quantized weight types against int8 activations
// (activations.hpp). Each weight row is processed for kTokenTile tokens at a
// time so a weight block is unpacked once per tile. Per token the arithmetic
// is the same whatever the tile size, so results never depend on how tokens
// are grouped.
#if defined(__x86_64__) || defined(__i386__)

#include <cstring>
#include <immintrin.h>

#include "kernels/simd_kernels.hpp"
#include "kernels/x86_helpers.hpp"

namespace bonsai::cpu {
namespace {

constexpr int kTokenTile = 4;
constexpr size_t kQ1Bytes = sizeof(BlockQ1_0);
constexpr size_t kQ2Bytes = sizeof(BlockQ2_0);
constexpr size_t kQ8Bytes = sizeof(BlockQ8_0);

// 0/1 bytes of the Q1Lanes order: chunk c byte 4j + r is value 16j + 4c + r,
// i.e. bit 4 (c % 2) + r of sign byte 2j + c / 2. Both 128-bit halves hold a
// copy of the 16 sign bytes, so in-lane shuffle indices reach all of them.
BONSAI_TARGET_AVX2 inline void expand_q1_signs(const uint8_t *signs, __m256i bit[4]) {
  const __m256i bytes =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(signs)));
  const __m256i even_bytes =
      _mm256_setr_epi8(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6, //
                       8, 8, 8, 8, 10, 10, 10, 10, 12, 12, 12, 12, 14, 14, 14, 14);
  const __m256i odd_bytes = _mm256_add_epi8(even_bytes, _mm256_set1_epi8(1));
  const __m256i low_nibble = _mm256_set1_epi32(0x08040201);
  const __m256i high_nibble = _mm256_set1_epi32(static_cast<int>(0x80402010u));
  const __m256i one = _mm256_set1_epi8(1);
  const __m256i from_even = _mm256_shuffle_epi8(bytes, even_bytes);
  const __m256i from_odd = _mm256_shuffle_epi8(bytes, odd_bytes);
  // min(selected bit, 1) turns any set bit into exactly 1.
  bit[0] = _mm256_min_epu8(_mm256_and_si256(from_even, low_nibble), one);
  bit[1] = _mm256_min_epu8(_mm256_and_si256(from_even, high_nibble), one);
  bit[2] = _mm256_min_epu8(_mm256_and_si256(from_odd, low_nibble), one);
  bit[3] = _mm256_min_epu8(_mm256_and_si256(from_odd, high_nibble), one);
}

// Lane j: sum of the int8 values of sub-block j whose sign bit is set.
BONSAI_TARGET_AVX2 inline __m256i masked_sums(const __m256i bit[4], const int8_t *xq) {
  // |pair sum| <= 254 per chunk, so four chunks stay far below int16 range.
  __m256i s = _mm256_maddubs_epi16(bit[0], load256(xq));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(bit[1], load256(xq + 32)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(bit[2], load256(xq + 64)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(bit[3], load256(xq + 96)));
  return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
}

// Lane j: sum of code * q over sub-block j (Q2Lanes order).
BONSAI_TARGET_AVX2 inline __m256i coded_sums(const __m256i codes[4], const int8_t *xq) {
  // |pair sum| <= 2 * 3 * 127 per chunk; four chunks stay within int16.
  __m256i s = _mm256_maddubs_epi16(codes[0], load256(xq));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(codes[1], load256(xq + 32)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(codes[2], load256(xq + 64)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(codes[3], load256(xq + 96)));
  return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
}

// Scales the 8 per-sub-block sums and adds them, times `factor`, to acc.
BONSAI_TARGET_AVX2 inline __m256 accumulate(__m256i sums, const float *sub_scales, float factor,
                                            __m256 acc) {
  const __m256 scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(sums), _mm256_loadu_ps(sub_scales));
  return _mm256_fmadd_ps(scaled, _mm256_set1_ps(factor), acc);
}

template <int NT> BONSAI_TARGET_AVX2 void q1_tile(const RowJob &job, int t0) {
  const int64_t n_blocks = job.cols / kActBlock;
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    __m256 acc[NT];
    float corr[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      corr[t] = 0.0f;
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t *block = row + static_cast<size_t>(b) * kQ1Bytes;
      const float dw = load_f16(block);
      __m256i bit[4];
      expand_q1_signs(block + 2, bit);
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        // d_w (2 sum_s d_s S_set,s - dsum): the vector part now, dsum in corr.
        acc[t] = accumulate(masked_sums(bit, job.q.q_block(t0 + t, b)), job.q.d_block(t0 + t, b),
                            2.0f * dw, acc[t]);
        corr[t] += dw * job.q.dsum_block(t0 + t, b);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      job.y[static_cast<int64_t>(t0 + t) * job.ldy + r] = hsum256(acc[t]) - corr[t];
  }
}

template <int NT> BONSAI_TARGET_AVX2 void q2_tile(const RowJob &job, int t0) {
  const int64_t n_blocks = job.cols / kActBlock;
  const __m256i low2 = _mm256_set1_epi8(3);
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    __m256 acc[NT];
    float corr[NT];
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      corr[t] = 0.0f;
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t *block = row + static_cast<size_t>(b) * kQ2Bytes;
      const float dw = load_f16(block);
      // Byte i holds the codes of values 4i..4i+3; shifting by 2k picks the
      // code of value 4i+k, which the Q2Lanes order stores at 32k+i.
      const __m256i packed = load256(block + 2);
      const __m256i codes[4] = {_mm256_and_si256(packed, low2),
                                _mm256_and_si256(_mm256_srli_epi16(packed, 2), low2),
                                _mm256_and_si256(_mm256_srli_epi16(packed, 4), low2),
                                _mm256_and_si256(_mm256_srli_epi16(packed, 6), low2)};
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        // d_w (sum_s d_s S_code,s - dsum): code - 1 is the ternary value.
        acc[t] = accumulate(coded_sums(codes, job.q.q_block(t0 + t, b)), job.q.d_block(t0 + t, b),
                            dw, acc[t]);
        corr[t] += dw * job.q.dsum_block(t0 + t, b);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t)
      job.y[static_cast<int64_t>(t0 + t) * job.ldy + r] = hsum256(acc[t]) - corr[t];
  }
}

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

template <void (*Tile4)(const RowJob &, int), void (*Tile1)(const RowJob &, int)>
void run_tiles(const RowJob &job) {
  int t = 0;
  for (; t + kTokenTile <= job.n_tokens; t += kTokenTile)
    Tile4(job, t);
  for (; t < job.n_tokens; ++t)
    Tile1(job, t);
}

} // namespace

void avx2_rows_q1(const RowJob &job) {
  run_tiles<q1_tile<kTokenTile>, q1_tile<1>>(job);
}
void avx2_rows_q2(const RowJob &job) {
  run_tiles<q2_tile<kTokenTile>, q2_tile<1>>(job);
}
void avx2_rows_q8(const RowJob &job) {
  run_tiles<q8_tile<kTokenTile>, q8_tile<1>>(job);
}

} // namespace bonsai::cpu

#endif
