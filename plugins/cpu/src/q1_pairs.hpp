#pragma once
// Q1_0 rows repacked two by two for the AVX-512 pair kernel
// (kernels/avx512_q1_pairs.cpp), done once at upload.
//
// Rows 2p and 2p + 1 form pair p, pair_bytes apart. A pair stores its blocks
// in groups of kPairGroupBlocks; a group is
//   32 bytes of scales: for each of its blocks, the f16 d of row 2p then of
//                       row 2p + 1 (zero past the group's last block);
//   32 bytes per block: qword k (k < 4) = sign-bit dword k of row 2p (values
//                       32k..32k+31, LSB first) | the same of row 2p + 1 << 32.
// So one 64-bit mask expands to 32 weights of each row, and one 256-bit load
// converts the scales of 8 blocks of both rows. An odd last row is paired
// with a zero row (scale 0, no bits). The bytes are those of the file,
// reordered: the same size except for the scale padding of a last group.
#include <cstddef>
#include <cstdint>

namespace bonsai::cpu {

inline constexpr int64_t kPairGroupBlocks = 8;
inline constexpr size_t kPairScaleBytes = 32;             // per group
inline constexpr size_t kPairBlockBytes = 32;             // sign bits of both rows, per block
inline constexpr size_t kPairGroupBytes =                 // a full group
    kPairScaleBytes + kPairGroupBlocks * kPairBlockBytes; // 288

struct Q1PairShape {
  int64_t rows = 0;
  int64_t n_blocks = 0; // 128-value blocks per row

  int64_t pairs() const { return (rows + 1) / 2; }
  int64_t groups() const { return (n_blocks + kPairGroupBlocks - 1) / kPairGroupBlocks; }
  size_t pair_bytes() const {
    return static_cast<size_t>(groups()) * kPairScaleBytes +
           static_cast<size_t>(n_blocks) * kPairBlockBytes;
  }
  size_t total_bytes() const { return static_cast<size_t>(pairs()) * pair_bytes(); }
};

// Offset of block b's group (its scales) and of block b's sign bits within a pair.
inline size_t pair_group_offset(int64_t b) {
  return static_cast<size_t>(b / kPairGroupBlocks) * kPairGroupBytes;
}
inline size_t pair_bits_offset(int64_t b) {
  return pair_group_offset(b) + kPairScaleBytes +
         static_cast<size_t>(b % kPairGroupBlocks) * kPairBlockBytes;
}

// Repacks pairs [p0, p1) of `rows` (Q1_0, row_bytes apart) into `out` (the
// pair-0 address of shape.total_bytes()).
void repack_q1_pairs(const uint8_t *rows, size_t row_bytes, const Q1PairShape &shape, int64_t p0,
                     int64_t p1, uint8_t *out);

// Row r of a repacked matrix, back in the file's Q1_0 bytes (n_blocks blocks).
void q1_pairs_row(const uint8_t *packed, const Q1PairShape &shape, int64_t r, uint8_t *row_out);

} // namespace bonsai::cpu
