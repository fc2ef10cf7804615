// The Advanced SIMD table kernel for Q1_0 weights stored in 32-row tiles of
// row-order sign lines (q1_tiles.hpp, TileFormat::Q1RowLines) against
// Q1Tables activations (activations.hpp): the AArch64 analogue of the AVX2
// table kernel (avx2_q1_tables.cpp), TBL taking the place of PSHUFB. Every
// AArch64 set runs every matmul of a tiled Q1_0 weight here, whatever the
// number of tokens, so a token's logits do not depend on how many tokens
// its step held.
//
// Per sub-block (16 inputs) and tile: two lines of 32 sign bytes give eight
// registers of 4-bit indices (low and high nibbles of rows 0-15 and 16-31);
// each of the sub-block's four input groups is 4 lookups (its low- and
// high-byte tables for both row halves), zipped into int16 sums of 32 rows.
// The sums are exactly sum_e w_e q_e of the quantized inputs; per row the
// float steps are the AVX2 kernel's: part = sum_s float(S_s) * d_s in
// sub-block order (fused), then acc += part * d_w per block.
#if defined(__aarch64__)

#include "kernels/arm_helpers.hpp"
#include "kernels/arm_kernels.hpp"
#include "q1_tiles.hpp"

namespace bonsai::cpu {
namespace {

// The nibble indices of a sub-block: [group i of the sub-block][rows 0-15,
// rows 16-31]. Group i reads line 2s + i / 2, nibble i % 2.
struct SubBlockIndices {
  uint8x16_t index[4][2];
};

inline void nibble_indices(const uint8_t *signs, int s, SubBlockIndices &out) {
  const uint8x16_t nibble = vdupq_n_u8(0x0f);
#pragma GCC unroll 2
  for (int line = 0; line < 2; ++line)
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const uint8x16_t bytes = vld1q_u8(signs + 32 * (2 * s + line) + 16 * half);
      out.index[2 * line][half] = vandq_u8(bytes, nibble);
      out.index[2 * line + 1][half] = vshrq_n_u8(bytes, 4);
    }
}

// The sub-block's int16 sums of the 32 rows against one token's tables:
// rows[i] holds rows 8i..8i+7. |sum| <= 4 * 4 * 127 fits int16.
inline void sub_block_sums(const SubBlockIndices &ix, const int8_t *tables, int16x8_t rows[4]) {
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const uint8x16_t low = vld1q_u8(reinterpret_cast<const uint8_t *>(tables + i * kQ1TableBytes));
    const uint8x16_t high =
        vld1q_u8(reinterpret_cast<const uint8_t *>(tables + i * kQ1TableBytes + 16));
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const uint8x16_t lo = vqtbl1q_u8(low, ix.index[i][half]);
      const uint8x16_t hi = vqtbl1q_u8(high, ix.index[i][half]);
      const int16x8_t first = vreinterpretq_s16_u8(vzip1q_u8(lo, hi));
      const int16x8_t second = vreinterpretq_s16_u8(vzip2q_u8(lo, hi));
      if (i == 0) {
        rows[2 * half] = first;
        rows[2 * half + 1] = second;
      } else {
        rows[2 * half] = vaddq_s16(rows[2 * half], first);
        rows[2 * half + 1] = vaddq_s16(rows[2 * half + 1], second);
      }
    }
  }
}

// part[j] (rows 4j..4j+3) += float(sum) * scale.
inline void add_scaled(const int16x8_t rows[4], float scale, float32x4_t part[8]) {
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    part[2 * i] = vfmaq_n_f32(part[2 * i], vcvtq_f32_s32(vmovl_s16(vget_low_s16(rows[i]))), scale);
    part[2 * i + 1] = vfmaq_n_f32(part[2 * i + 1], vcvtq_f32_s32(vmovl_high_s16(rows[i])), scale);
  }
}

// The nibble indices of a block's eight sub-blocks.
inline void block_indices(const uint8_t *block, SubBlockIndices ix[kSubsPerBlock]) {
  for (int s = 0; s < kSubsPerBlock; ++s)
    nibble_indices(block + kQ1TileScaleBytes, s, ix[s]);
}

// One block of one token: part = sum over sub-blocks of the scaled sums.
inline void block_part(const SubBlockIndices ix[kSubsPerBlock], const QuantizedActs &q, int t,
                       int64_t b, float32x4_t part[8]) {
  const int8_t *tables = q.q_block(t, b);
  const float *sub_scales = q.d_block(t, b);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j)
    part[j] = vdupq_n_f32(0.0f);
  for (int s = 0; s < kSubsPerBlock; ++s) {
    int16x8_t rows[4];
    sub_block_sums(ix[s], tables + 4 * s * kQ1TableBytes, rows);
    add_scaled(rows, sub_scales[s], part);
  }
}

// One tile against one token, accumulators in registers (decode).
void tile_one_token(const uint8_t *tile, int64_t n_blocks, const QuantizedActs &q, int t,
                    float *y) {
  float32x4_t acc[8];
  for (int j = 0; j < 8; ++j)
    acc[j] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t *block = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    SubBlockIndices ix[kSubsPerBlock];
    block_indices(block, ix);
    float32x4_t part[8];
    block_part(ix, q, t, b, part);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      acc[j] = vfmaq_f32(acc[j], part[j], load4_f16(block + 8 * j));
  }
  for (int j = 0; j < 8; ++j)
    vst1q_f32(y + 4 * j, acc[j]);
}

// One tile against n_tokens tokens: each block's nibble indices are formed
// once for all tokens; the accumulators live in y (rows ldy apart per
// token), with the same operations per token as tile_one_token.
void tile_tokens(const uint8_t *tile, int64_t n_blocks, const QuantizedActs &q, int n_tokens,
                 float *y, int64_t ldy) {
  for (int t = 0; t < n_tokens; ++t)
    for (int j = 0; j < 8; ++j)
      vst1q_f32(y + t * ldy + 4 * j, vdupq_n_f32(0.0f));
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t *block = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    SubBlockIndices ix[kSubsPerBlock];
    block_indices(block, ix);
    float32x4_t dw[8];
    for (int j = 0; j < 8; ++j)
      dw[j] = load4_f16(block + 8 * j);
    for (int t = 0; t < n_tokens; ++t) {
      float32x4_t part[8];
      block_part(ix, q, t, b, part);
      float *out = y + t * ldy;
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j)
        vst1q_f32(out + 4 * j, vfmaq_f32(vld1q_f32(out + 4 * j), part[j], dw[j]));
    }
  }
}

} // namespace

void neon_q1_tables_tile(const uint8_t *tile, int64_t n_blocks, const QuantizedActs &q,
                         int n_tokens, float *y, int64_t ldy) {
  if (n_tokens == 1)
    tile_one_token(tile, n_blocks, q, 0, y);
  else
    tile_tokens(tile, n_blocks, q, n_tokens, y, ldy);
}

void neon_rows_q1_tables(const RowJob &job) {
  const int64_t n_blocks = job.cols / kActBlock;
  for_each_q1_tile(job.w, job.w_row_bytes, job.n_rows, [&](const uint8_t *tile, int64_t r) {
    neon_q1_tables_tile(tile, n_blocks, job.q, job.n_tokens, job.y + r, job.ldy);
  });
}

} // namespace bonsai::cpu

#endif
