// The i8mm kernel for Q1_0 weights in 32-row tiles of row-order sign lines
// (q1_tiles.hpp, TileFormat::Q1RowLines) against Q1TablesAndValues
// activations (activations.hpp). Pairs of tokens go through SMMLA: per
// block, every tile row's sign bits are expanded once into +-1 bytes, two
// rows' 8 inputs per register, and each SMMLA multiplies such a pair of
// rows with the same 8 inputs of two tokens into the four int32 sums
// [row 0 token 0, row 0 token 1, row 1 token 0, row 1 token 1]; 16 SMMLA
// per row pair and block. Steps of fewer than kMinPairedTokens tokens, and
// the last token of an odd step, go through the table kernel
// (neon_q1_tables.cpp).
//
// Both paths form the same exact int32 sums per row, token and 16-input
// sub-block and apply the same float steps to them, lane by lane:
// part = sum_s float(S_s) * d_s in sub-block order (fused), then
// acc += part * d_w per block. So a token's result does not depend on
// whether its step paired it, and equals the neon and dotprod sets' bit for
// bit.
#if defined(__aarch64__)

#include <algorithm>

#include "kernels/arm_helpers.hpp"
#include "kernels/arm_kernels.hpp"
#include "q1_tiles.hpp"

namespace bonsai::cpu {
namespace {

constexpr int kRowPairs = kQ1TileRows / 2;
constexpr int kSignBytes = kQ1BlockSize / 8; // 16 per row and block
// Token pairs per pass over a tile: their accumulators stay on the stack.
constexpr int kMaxPairs = 32;
// Steps of fewer tokens take the table kernel. Per block of a tile
// (llvm-mca, Neoverse V1; docs/arm64.md): the sign expansion ~310 cycles
// once, then ~103 cycles per token against ~193 for the lookups, so the
// SMMLA path pays from about 4 tokens on.
constexpr int kMinPairedTokens = 4;

// One block's rows expanded: a[m][k] = rows 2m and 2m + 1, sign byte k
// (inputs 8k..8k+7), as [row 2m's 8 weights | row 2m + 1's], negated: -1
// for a set bit, +1 for a clear one (one OR on the bit test's mask). The
// scales are negated to match, so every product is the same float.
struct PairRows {
  int8x16_t a[kRowPairs][kSignBytes];
};

// Line k holds sign byte k of rows 0..31 at positions 0..31: zips of the
// line with itself repeat every byte 2, 4 and then 8 times (a pair of rows
// per register, no constant tables), and a test against the 8 bit masks
// turns each copy into its row's (negated) weight.
BONSAI_TARGET_I8MM void expand_rows(const uint8_t *lines, PairRows &out) {
  static constexpr uint8_t kBits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bits = vld1q_u8(kBits);
  const uint8x16_t one = vdupq_n_u8(1);
  const auto weights = [&](uint32x4_t pair) {
    return vreinterpretq_s8_u8(vorrq_u8(vtstq_u8(vreinterpretq_u8_u32(pair), bits), one));
  };
  for (int k = 0; k < kSignBytes; ++k)
    for (int half = 0; half < 2; ++half) {
      const uint8x16_t line = vld1q_u8(lines + 32 * k + 16 * half);
      const uint8x16_t twice[2] = {vzip1q_u8(line, line), vzip2q_u8(line, line)};
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) { // rows 4q..4q+3 of the half, each 4 times
        const uint16x8_t pairs = vreinterpretq_u16_u8(twice[q / 2]);
        const uint32x4_t four =
            vreinterpretq_u32_u16(q % 2 == 0 ? vzip1q_u16(pairs, pairs) : vzip2q_u16(pairs, pairs));
        out.a[8 * half + 2 * q][k] = weights(vzip1q_u32(four, four));
        out.a[8 * half + 2 * q + 1][k] = weights(vzip2q_u32(four, four));
      }
    }
}

// The weight scales of row pair m: {d_2m, d_2m, d_2m+1, d_2m+1}.
BONSAI_TARGET_I8MM void pair_scales(const uint8_t *block, float32x4_t out[kRowPairs]) {
  for (int j = 0; j < kQ1TileRows / 4; ++j) {
    const float32x4_t rows = load4_f16(block + 8 * j); // rows 4j..4j+3
    out[2 * j] = vzip1q_f32(rows, rows);
    out[2 * j + 1] = vzip2q_f32(rows, rows);
  }
}

// One block of a tile against tokens t and t + 1: acc[m] (lanes row 2m
// token t, row 2m token t + 1, row 2m + 1 token t, row 2m + 1 token t + 1)
// += the block's part times the rows' scales.
BONSAI_TARGET_I8MM void block_pair(const PairRows &w, const float32x4_t dw[kRowPairs],
                                   const QuantizedActs &q, int t, int64_t b,
                                   float32x4_t acc[kRowPairs]) {
  const int8_t *v0 = q.q_block(t, b) + kQ1TableBlockBytes;
  const int8_t *v1 = q.q_block(t + 1, b) + kQ1TableBlockBytes;
  int8x16_t x[kSignBytes]; // {token t's inputs 8k..8k+7 | token t + 1's}
  for (int k = 0; k < kSignBytes; ++k)
    x[k] = vcombine_s8(vld1_s8(v0 + 8 * k), vld1_s8(v1 + 8 * k));
  const float *d0 = q.d_block(t, b), *d1 = q.d_block(t + 1, b);
  // {-d0[s], -d1[s], -d0[s], -d1[s]}: negated as the weights are, so that
  // float(-S) * -d is float(S) * d exactly.
  float32x4_t d[kSubsPerBlock];
  for (int h = 0; h < 2; ++h) {
    const float32x4_t first = vnegq_f32(vld1q_f32(d0 + 4 * h));
    const float32x4_t second = vnegq_f32(vld1q_f32(d1 + 4 * h));
    const float32x4_t low = vzip1q_f32(first, second);
    const float32x4_t high = vzip2q_f32(first, second);
    d[4 * h] = vcombine_f32(vget_low_f32(low), vget_low_f32(low));
    d[4 * h + 1] = vcombine_f32(vget_high_f32(low), vget_high_f32(low));
    d[4 * h + 2] = vcombine_f32(vget_low_f32(high), vget_low_f32(high));
    d[4 * h + 3] = vcombine_f32(vget_high_f32(high), vget_high_f32(high));
  }
  for (int m = 0; m < kRowPairs; ++m) {
    float32x4_t part = vdupq_n_f32(0.0f);
#pragma GCC unroll 8
    for (int s = 0; s < kSubsPerBlock; ++s) {
      const int32x4_t sums = vmmlaq_s32(vmmlaq_s32(vdupq_n_s32(0), w.a[m][2 * s], x[2 * s]),
                                        w.a[m][2 * s + 1], x[2 * s + 1]);
      part = vfmaq_f32(part, vcvtq_f32_s32(sums), d[s]);
    }
    acc[m] = vfmaq_f32(acc[m], part, dw[m]);
  }
}

// One tile against n_pairs pairs of tokens from t0.
BONSAI_TARGET_I8MM void tile_pairs(const uint8_t *tile, int64_t n_blocks, const QuantizedActs &q,
                                   int t0, int n_pairs, float *y, int64_t ldy) {
  float32x4_t acc[kMaxPairs][kRowPairs];
  for (int p = 0; p < n_pairs; ++p)
    for (int m = 0; m < kRowPairs; ++m)
      acc[p][m] = vdupq_n_f32(0.0f);
  PairRows w;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t *block = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    expand_rows(block + kQ1TileScaleBytes, w);
    float32x4_t dw[kRowPairs];
    pair_scales(block, dw);
    for (int p = 0; p < n_pairs; ++p)
      block_pair(w, dw, q, t0 + 2 * p, b, acc[p]);
  }
  for (int p = 0; p < n_pairs; ++p) {
    float *first = y + static_cast<int64_t>(t0 + 2 * p) * ldy, *second = first + ldy;
    for (int m = 0; m < kRowPairs; ++m) {
      alignas(16) float lanes[4];
      vst1q_f32(lanes, acc[p][m]);
      first[2 * m] = lanes[0];
      second[2 * m] = lanes[1];
      first[2 * m + 1] = lanes[2];
      second[2 * m + 1] = lanes[3];
    }
  }
}

} // namespace

void i8mm_rows_q1_tiles(const RowJob &job) {
  const int64_t n_blocks = job.cols / kActBlock;
  if (job.n_tokens < kMinPairedTokens) {
    neon_rows_q1_tables(job);
    return;
  }
  const int pairs = job.n_tokens / 2;
  for_each_q1_tile(job.w, job.w_row_bytes, job.n_rows, [&](const uint8_t *tile, int64_t r) {
    for (int p = 0; p < pairs; p += kMaxPairs)
      tile_pairs(tile, n_blocks, job.q, 2 * p, std::min(kMaxPairs, pairs - p), job.y + r, job.ldy);
    if (job.n_tokens % 2 != 0) // the lone token: the table kernel
      neon_q1_tables_tile(tile, n_blocks, job.q.tokens_from(job.n_tokens - 1), 1,
                          job.y + static_cast<int64_t>(job.n_tokens - 1) * job.ldy + r, job.ldy);
  });
}

} // namespace bonsai::cpu

#endif
