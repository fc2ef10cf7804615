#include "q1_pairs.hpp"

#include <cstring>

#include "bonsai/core/formats.hpp"

namespace bonsai::cpu {
namespace {

constexpr size_t kSignBytes = sizeof(BlockQ1_0) - 2; // 16 bytes after the f16 scale
constexpr int kDwords = 4;                           // sign-bit dwords per block

} // namespace

void repack_q1_pairs(const uint8_t *rows, size_t row_bytes, const Q1PairShape &shape, int64_t p0,
                     int64_t p1, uint8_t *out) {
  static_assert(kSignBytes == kDwords * sizeof(uint32_t));
  const size_t pair_bytes = shape.pair_bytes();
  for (int64_t p = p0; p < p1; ++p) {
    uint8_t *pair = out + static_cast<size_t>(p) * pair_bytes;
    std::memset(pair, 0, pair_bytes); // scale padding, and the missing row of an odd pair
    for (int half = 0; half < 2; ++half) {
      const int64_t r = 2 * p + half;
      if (r >= shape.rows)
        break;
      const uint8_t *row = rows + static_cast<size_t>(r) * row_bytes;
      for (int64_t b = 0; b < shape.n_blocks; ++b) {
        const uint8_t *block = row + static_cast<size_t>(b) * sizeof(BlockQ1_0);
        uint8_t *scales = pair + pair_group_offset(b);
        std::memcpy(scales + 4 * (b % kPairGroupBlocks) + 2 * half, block, 2);
        uint8_t *bits = pair + pair_bits_offset(b);
        for (int k = 0; k < kDwords; ++k)
          std::memcpy(bits + 8 * k + 4 * half, block + 2 + 4 * k, 4);
      }
    }
  }
}

void q1_pairs_row(const uint8_t *packed, const Q1PairShape &shape, int64_t r, uint8_t *row_out) {
  const uint8_t *pair = packed + static_cast<size_t>(r / 2) * shape.pair_bytes();
  const int half = static_cast<int>(r % 2);
  for (int64_t b = 0; b < shape.n_blocks; ++b) {
    uint8_t *block = row_out + static_cast<size_t>(b) * sizeof(BlockQ1_0);
    std::memcpy(block, pair + pair_group_offset(b) + 4 * (b % kPairGroupBlocks) + 2 * half, 2);
    const uint8_t *bits = pair + pair_bits_offset(b);
    for (int k = 0; k < kDwords; ++k)
      std::memcpy(block + 2 + 4 * k, bits + 8 * k + 4 * half, 4);
  }
}

} // namespace bonsai::cpu
