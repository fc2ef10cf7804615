// The AVX2 table kernel for Q1_0 weights stored in 32-row tiles of sign
// lines (q1_tiles.hpp) against Q1Tables activations (activations.hpp). A
// context on the avx2 or avxvnni set runs every matmul of a tiled Q1_0
// weight here, whatever the number of tokens, so a token's logits do not
// depend on how many tokens its step held (speculative verification and
// prompt-cache reuse rely on it).
//
// Per sub-block (16 inputs) and tile the kernel does two loads of 32 sign
// bytes, four nibble index vectors and eight table lookups (the low and high
// bytes of each group's 16 int16 sums), against about 25 operations per
// 128-weight block and row for the expansion kernels. The sums it forms are
// exactly sum_e w_e q_e of the quantized inputs; only the float scaling
// differs in order from the expansion kernels.
#if defined(__x86_64__) || defined(__i386__)

#include <cstring>
#include <immintrin.h>

#include "kernels/simd_kernels.hpp"
#include "kernels/x86_helpers.hpp"
#include "q1_tiles.hpp"

namespace bonsai::cpu {
namespace {

// How far ahead of the block being read the kernel prefetches.
constexpr size_t kPrefetchAhead = 4096;
// Steps of up to this many tokens prefetch too.
constexpr int kPrefetchTokens = 16;

BONSAI_TARGET_AVX2 inline __m256i broadcast128(const int8_t *p) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}

// Adds the int16 sums of group g's table at the nibbles `index` (one per
// byte) to w_low (positions 0..7 | 16..23) and w_high (8..15 | 24..31).
BONSAI_TARGET_AVX2 inline void look_up(const int8_t *table, __m256i index, __m256i &w_low,
                                       __m256i &w_high) {
  const __m256i low = _mm256_shuffle_epi8(broadcast128(table), index);
  const __m256i high = _mm256_shuffle_epi8(broadcast128(table + 16), index);
  w_low = _mm256_add_epi16(w_low, _mm256_unpacklo_epi8(low, high));
  w_high = _mm256_add_epi16(w_high, _mm256_unpackhi_epi8(low, high));
}

// One sub-block (16 inputs, sign lines 2s and 2s + 1) of a tile against one
// token's tables: the 32 rows' int16 sums, rows 0-7 | 16-23 in w_low and
// 8-15 | 24-31 in w_high (q1_tile_row).
BONSAI_TARGET_AVX2 inline void sub_block_sums(const __m256i index[4], const int8_t *tables,
                                              __m256i &w_low, __m256i &w_high) {
  w_low = _mm256_setzero_si256();
  w_high = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) // groups 4s + i: line 2s + i / 2, nibble i % 2
    look_up(tables + i * kQ1TableBytes, index[i], w_low, w_high);
}

// The nibble indices of sign lines 2s and 2s + 1: low nibble, high nibble.
BONSAI_TARGET_AVX2 inline void nibble_indices(const uint8_t *signs, int s, __m256i index[4]) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {
    const __m256i line = load256(signs + 32 * (2 * s + half));
    index[2 * half] = _mm256_and_si256(line, nibble);
    index[2 * half + 1] = _mm256_and_si256(_mm256_srli_epi16(line, 4), nibble);
  }
}

// part[i] (rows 8i..8i+7) += the sub-block's sums times its input scale.
BONSAI_TARGET_AVX2 inline void add_scaled(__m256i w_low, __m256i w_high, const float *scale,
                                          __m256 part[4]) {
  // |sum| <= 4 * 4 * 127 fits int16. Even and odd int16 lanes to int32 by
  // shifts (not by shuffles, which the lookups keep busy): rows 0-7, 8-15,
  // 16-23, 24-31 (q1_tile_row).
  const __m256i rows[4] = {
      _mm256_srai_epi32(_mm256_slli_epi32(w_low, 16), 16), _mm256_srai_epi32(w_low, 16),
      _mm256_srai_epi32(_mm256_slli_epi32(w_high, 16), 16), _mm256_srai_epi32(w_high, 16)};
  const __m256 d = _mm256_broadcast_ss(scale);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
    part[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rows[i]), d, part[i]);
}

// The f16 weight scales of rows 8i..8i+7 of a tile's block.
BONSAI_TARGET_AVX2 inline __m256 block_scales(const uint8_t *block, int i) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 16 * i)));
}

// Both tile functions take, per token and block, part = sum_s S_s d_s in
// sub-block order and then acc += part * d_w: the same operations in the same
// order whatever the number of tokens, so a token's result never depends on
// its step.

// One tile against one token, accumulators in registers (decode).
BONSAI_TARGET_AVX2 void tile_one_token(const uint8_t *tile, int64_t n_blocks,
                                       const QuantizedActs &q, int t, float *y) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  // The tile is read front to back; fetch kPrefetchAhead bytes ahead, as the
  // expansion kernels do (integer addresses: a prefetch past the weights
  // never faults).
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(tile) + kPrefetchAhead;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t *block = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    for (size_t line = 0; line < kQ1TileBlockBytes; line += 64)
      _mm_prefetch(
          reinterpret_cast<const char *>(ahead + static_cast<size_t>(b) * kQ1TileBlockBytes + line),
          _MM_HINT_T0);
    const int8_t *tables = q.q_block(t, b);
    const float *sub_scales = q.d_block(t, b);
    __m256 part[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                      _mm256_setzero_ps()};
    for (int s = 0; s < kSubsPerBlock; ++s) {
      __m256i index[4], w_low, w_high;
      nibble_indices(block + kQ1TileScaleBytes, s, index);
      sub_block_sums(index, tables + 4 * s * kQ1TableBytes, w_low, w_high);
      add_scaled(w_low, w_high, sub_scales + s, part);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
      acc[i] = _mm256_fmadd_ps(part[i], block_scales(block, i), acc[i]);
  }
  for (int i = 0; i < 4; ++i)
    _mm256_storeu_ps(y + 8 * i, acc[i]);
}

// One tile against n_tokens tokens: each block's nibble indices are formed
// once for all tokens; the accumulators live in y (rows ldy apart per token).
BONSAI_TARGET_AVX2 void tile_tokens(const uint8_t *tile, int64_t n_blocks, const QuantizedActs &q,
                                    int n_tokens, float *y, int64_t ldy) {
  for (int t = 0; t < n_tokens; ++t)
    for (int i = 0; i < 4; ++i)
      _mm256_storeu_ps(y + t * ldy + 8 * i, _mm256_setzero_ps());
  // A small step (a verify step, a few sequences) reads the tile faster than
  // the hardware prefetcher brings it, as decode does; a prefill's many
  // tokens per block leave it time.
  const bool fetch_ahead = n_tokens <= kPrefetchTokens;
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(tile) + kPrefetchAhead;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t *block = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    for (size_t line = 0; fetch_ahead && line < kQ1TileBlockBytes; line += 64)
      _mm_prefetch(
          reinterpret_cast<const char *>(ahead + static_cast<size_t>(b) * kQ1TileBlockBytes + line),
          _MM_HINT_T0);
    __m256i index[kSubsPerBlock][4];
    for (int s = 0; s < kSubsPerBlock; ++s)
      nibble_indices(block + kQ1TileScaleBytes, s, index[s]);
    const __m256 dw[4] = {block_scales(block, 0), block_scales(block, 1), block_scales(block, 2),
                          block_scales(block, 3)};
    for (int t = 0; t < n_tokens; ++t) {
      const int8_t *tables = q.q_block(t, b);
      const float *sub_scales = q.d_block(t, b);
      __m256 part[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                        _mm256_setzero_ps()};
      for (int s = 0; s < kSubsPerBlock; ++s) {
        __m256i w_low, w_high;
        sub_block_sums(index[s], tables + 4 * s * kQ1TableBytes, w_low, w_high);
        add_scaled(w_low, w_high, sub_scales + s, part);
      }
      float *out = y + t * ldy;
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
        _mm256_storeu_ps(out + 8 * i,
                         _mm256_fmadd_ps(part[i], dw[i], _mm256_loadu_ps(out + 8 * i)));
    }
  }
}

} // namespace

void avx2_rows_q1_tables(const RowJob &job) {
  const int64_t n_blocks = job.cols / kActBlock;
  for_each_q1_tile(job.w, job.w_row_bytes, job.n_rows, [&](const uint8_t *tile, int64_t r) {
    if (job.n_tokens == 1)
      tile_one_token(tile, n_blocks, job.q, 0, job.y + r);
    else
      tile_tokens(tile, n_blocks, job.q, job.n_tokens, job.y + r, job.ldy);
  });
}

} // namespace bonsai::cpu

#endif
