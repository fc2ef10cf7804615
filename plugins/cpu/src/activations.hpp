#pragma once
// Activations for the fast kernels: each token row quantized once per matmul
// input to int8. Kernels walk 128-value blocks (the weight block size), and
// every 16-value sub-block (AVX2 layouts) or 8-value lane (AVX-512 layouts)
// has its own f32 scale: with one scale per 128 values the tiny golden models
// reach only cosine 0.9994-0.9996 against the float64 reference, at the
// 0.9995 gate; per-16 scales give >= 0.9997 and per-8 >= 0.9998 at almost no
// cost (see plugins/cpu/README.md).
//
// Inside a block the values are stored in a per-kernel order chosen so that,
// once a kernel has summed its four 32-byte chunks, int32 lane j of the AVX2
// accumulator holds sub-block j only; the 8 sub-scales then apply as one
// vector multiply per block. dsum = sum over sub-blocks of d_s * (sum of q)
// carries the part of the 1-bit/ternary dot that does not depend on weights:
//   Q1_0: sum w x = d_w (2 * sum_s d_s S_set,s - dsum)
//   Q2_0: sum w x = d_w (sum_s d_s S_code,s - dsum)
#include <cstdint>
#include <memory>

namespace bonsai::cpu {

inline constexpr int kActBlock = 128;
inline constexpr int kActSub = 16;
inline constexpr int kSubsPerBlock = kActBlock / kActSub; // 8

// Where value e (0..127) of a block is stored, and which values share a
// scale (a scale group). The first three layouts keep 8 sub-block scales
// (contiguous runs of 16 values) and dsum per block, for the AVX2 kernels.
// The "512" layouts are for the AVX-512 kernels, whose accumulator has 16
// int32 lanes per block: each lane (8 values) is its own scale group, and
// they store per lane its scale and its correction term (see
// meta_per_block), so a kernel needs no shuffles of scales.
enum class QuantLayout {
  Natural, // at e
  // The AVX2 Q1_0 order: a block's 16 sign bytes broadcast to both halves of
  // a 32-byte register line up with the values without a shuffle. Value e
  // (sign bit e % 8 of byte e / 8) is at 32c + i with c = e % 4 and i = e / 8
  // for bits 0..3, i = 16 + e / 8 for bits 4..7: chunk c holds bit c of the
  // 16 bytes, then bit c + 4. Its scale group is i / 4 (dword i / 4 of every
  // chunk): 4 bytes times 4 bits, 16 values, not 16 consecutive ones.
  Q1Lanes,
  // At 32k + b for e = 4b + k: chunk k lines up with the k-th 2-bit code of
  // every Q2_0 byte b, and bytes 4j..4j+3 are values 16j..16j+15.
  Q2Lanes,
  // At e (the raw Q1_0 sign bits are the byte mask of the block). Lane j
  // sums values 4j..4j+3 and 64+4j..64+4j+3.
  Q1Mask512,
  // Q2Lanes order. Lane j sums positions 4j..4j+3 and 64+4j..64+4j+3: the
  // values 16s + 4i + k (i < 4) of s = j % 8 with k = 0, 2 (j < 8) or 1, 3.
  Q2Lanes512,
  // Not values but lookup tables, for the AVX2 Q1_0 kernel on 32-row tiles
  // (q1_tiles.hpp): the block is quantized as Natural (same bytes, scales
  // and dsum), then each 4-value group n (values 4n..4n+3, n < 32) gets the
  // 16 sums t[v] = sum_j (bit j of v ? +q : -q)(4n + j) as int16, stored as
  // 32 bytes at 32n: the 16 low bytes t & 0xff, then the 16 high bytes
  // t >> 8. A 1-bit weight nibble is then an index into its group's table.
  Q1Tables,
  // Q1Tables' 1,024 bytes of tables followed by the block's 128 Natural
  // values, for the AArch64 i8mm Q1_0 tile kernel: a lone token goes
  // through the tables, pairs of tokens through the values (SMMLA).
  Q1TablesAndValues,
};
inline constexpr int kQuantLayouts = 7;
// Bytes a block of one token takes in the q buffer: 128 for the value
// layouts, 32 tables of 32 bytes for Q1Tables, and 128 more for
// Q1TablesAndValues (the values at kQ1TableBlockBytes).
inline constexpr int64_t kQ1TableBytes = 32;
inline constexpr int64_t kQ1TablesPerBlock = 32;
inline constexpr int64_t kQ1TableBlockBytes = kQ1TablesPerBlock * kQ1TableBytes;
inline bool layout_has_tables(QuantLayout layout) {
  return layout == QuantLayout::Q1Tables || layout == QuantLayout::Q1TablesAndValues;
}
inline int64_t q_block_bytes(QuantLayout layout) {
  switch (layout) {
  case QuantLayout::Q1Tables:
    return kQ1TableBlockBytes;
  case QuantLayout::Q1TablesAndValues:
    return kQ1TableBlockBytes + 128;
  default:
    return 128;
  }
}

int layout_position(QuantLayout layout, int e);
// The scale group of value e: its sub-block (0..7, 16 values each), or for
// the 512 layouts its lane (0..15, 8 values each).
int layout_scale_group(QuantLayout layout, int e);
int layout_scale_groups(QuantLayout layout); // 8 or 16
// For the 512 layouts: the int32 lane (0..15) value e is summed into, i.e.
// (position % 64) / 4; -1 for the others.
int layout_lane(QuantLayout layout, int e);
bool layout_has_lane_meta(QuantLayout layout);

// Metadata floats per block and token: 8 sub-block scales, or for the 512
// layouts 16 lane scales followed by 16 lane corrections
// (correction j = scale_j * sum of the lane's quantized values), so that
//   sum_e w_e x_e = d_w * sum_j (scale_j * S_j - correction_j)
// where S_j is the lane's sum of u_e * q_e with u_e = w_e / d_w + 1, an
// unsigned byte: 2 * sign bit for Q1_0, the 2-bit code for Q2_0.
inline constexpr int kLaneCount = 16;
inline constexpr int kLaneMetaPerBlock = 2 * kLaneCount;
int meta_per_block(QuantLayout layout);

// A view of n_tokens quantized rows of `cols` (a multiple of 128) values.
// Storage is block-major: block b of every token of the buffer lies side by
// side (token t at (b * token_stride + t) * 128), so a kernel applying one
// weight block to a tile of tokens reads one contiguous run, addressed from
// a single pointer. token_stride is at least the token count (1 in decode).
// Token slots per block for n_tokens: at least 8 more than n_tokens, and
// odd, so that consecutive blocks never lie a power of two apart (with 512
// or 8 tokens they would be 64 KiB or 1 KiB apart, a tile's blocks would all
// fall into the same L1 sets and evict each other: 8-token tiles ran at a
// quarter of the speed of 32-token ones).
inline int64_t padded_token_stride(int n_tokens) {
  return n_tokens <= 1 ? 1 : (static_cast<int64_t>(n_tokens) + 8) | 1;
}
struct QuantizedActs {
  int64_t cols = 0;
  int64_t n_blocks = 0; // cols / 128
  int n_tokens = 0;
  int64_t token_stride = 1;
  int d_per_block = kSubsPerBlock; // meta_per_block(layout)
  const int8_t *q = nullptr;       // [n_blocks][token_stride][block_bytes]
  const float *d = nullptr;        // [n_blocks][token_stride][d_per_block] scales (or lane meta)
  const float *dsum = nullptr;     // [n_blocks][token_stride] (not for the 512 layouts)
  int64_t block_bytes = kActBlock; // q_block_bytes(layout)

  int64_t slot(int t, int64_t b) const { return b * token_stride + t; }
  const int8_t *q_block(int t, int64_t b) const { return q + slot(t, b) * block_bytes; }
  const float *d_block(int t, int64_t b) const { return d + slot(t, b) * d_per_block; }
  float dsum_block(int t, int64_t b) const { return dsum[slot(t, b)]; }
  QuantizedActs tokens_from(int t0) const; // view starting at token t0
};

// Where quantize_act_row writes a token: block b goes to q + b * stride *
// q_block_bytes, d + b * stride * meta_per_block and dsum + b * stride.
struct QuantTarget {
  int8_t *q = nullptr;
  float *d = nullptr;
  float *dsum = nullptr;
  int64_t stride = 1;
};

// Quantizes one row: per scale group d = max|x| / 127, q = round-to-nearest(x / d).
// The scalar definition; SIMD versions must give the same bytes and meta.
void quantize_act_row(const float *x, int64_t cols, QuantLayout layout, const QuantTarget &out);
using QuantizeRowFn = void (*)(const float *x, int64_t cols, QuantLayout layout,
                               const QuantTarget &out);

// A SIMD quantize_act_row from a kernel that quantizes one block of 128
// values in the Natural, Q1Lanes or Q2Lanes layout,
//   quantize_block(xb, layout, q, d, dsum),
// and one that builds a block's Q1Tables from its Natural bytes,
//   build_tables(values, tables):
// the table layouts go through Natural bytes (Q1TablesAndValues keeps them
// after the tables), other layouts to the scalar quantizer.
template <class QuantizeBlock, class BuildTables>
void quantize_row_by_blocks(const float *x, int64_t cols, QuantLayout layout,
                            const QuantTarget &out, QuantizeBlock &&quantize_block,
                            BuildTables &&build_tables) {
  const int64_t n_blocks = cols / kActBlock;
  const auto target = [&](int64_t b, int64_t block_bytes) {
    return QuantTarget{out.q + b * out.stride * block_bytes, out.d + b * out.stride * kSubsPerBlock,
                       out.dsum + b * out.stride, out.stride};
  };
  if (layout_has_tables(layout)) {
    alignas(32) int8_t values[kActBlock];
    for (int64_t b = 0; b < n_blocks; ++b) {
      const QuantTarget at = target(b, q_block_bytes(layout));
      quantize_block(x + b * kActBlock, QuantLayout::Natural, values, at.d, at.dsum);
      build_tables(values, at.q);
      if (layout == QuantLayout::Q1TablesAndValues)
        for (int e = 0; e < kActBlock; ++e)
          at.q[kQ1TableBlockBytes + e] = values[e];
    }
    return;
  }
  if (layout != QuantLayout::Natural && layout != QuantLayout::Q1Lanes &&
      layout != QuantLayout::Q2Lanes) {
    quantize_act_row(x, cols, layout, out);
    return;
  }
  for (int64_t b = 0; b < n_blocks; ++b) {
    const QuantTarget at = target(b, kActBlock);
    quantize_block(x + b * kActBlock, layout, at.q, at.d, at.dsum);
  }
}

// Storage for quantized activations of up to n_tokens x cols values; grows
// on demand. Pages are only touched when used.
class QuantBuffer {
public:
  // Room for token_slots rows of cols values, block_bytes bytes and
  // meta_per_block floats of metadata per 128-value block.
  void reserve(int64_t token_slots, int64_t cols, int64_t block_bytes, int meta_per_block);
  int8_t *q() { return q_.get(); }
  float *d() { return d_.get(); }
  float *dsum() { return dsum_.get(); }

private:
  int64_t capacity_values_ = 0; // q bytes
  int64_t capacity_blocks_ = 0;
  int64_t capacity_meta_ = 0;
  std::unique_ptr<int8_t[]> q_;
  std::unique_ptr<float[]> d_;
  std::unique_ptr<float[]> dsum_;
};

} // namespace bonsai::cpu
