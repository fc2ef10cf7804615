#include "q1_tiles.hpp"

#include "byte_transpose.hpp"
#include <cstring>

namespace bonsai::cpu {

namespace {

// The row at position p of a line, and the position of row r.
int line_row(TileFormat format, int p) {
  return format == TileFormat::Q1SignLines ? q1_tile_row(p) : p;
}
int line_position(TileFormat format, int r) {
  return format == TileFormat::Q1SignLines ? q1_tile_position(r) : r;
}

// Sign lines (Q1SignLines, Q1RowLines): line k holds byte k of every row.
void tile_lines(TileFormat format, const uint8_t *const rows[kQ1TileRows], uint8_t *lines) {
  // Positions 16h..16h+15 of every line from 16 rows.
  for (int h = 0; h < 2; ++h) {
    const uint8_t *rows16[16];
    for (int j = 0; j < 16; ++j)
      rows16[j] = rows[line_row(format, 16 * h + j)];
#if defined(__SSE2__)
    __m128i by_byte[16];
    transpose_16x16(rows16, by_byte);
    for (int k = 0; k < 16; ++k)
      _mm_storeu_si128(reinterpret_cast<__m128i *>(lines + 32 * k + 16 * h), by_byte[k]);
#else
    for (int j = 0; j < 16; ++j)
      for (int k = 0; k < 16; ++k)
        lines[32 * k + 16 * h + j] = rows16[j][k];
#endif
  }
}

void tile_masks(const uint8_t *const rows[kQ1TileRows], uint8_t *masks) {
  for (int h = 0; h < 2; ++h) {
    uint8_t *half = masks + 256 * h;
#if defined(__SSE2__)
    __m128i by_byte[16];
    transpose_16x16(rows + 16 * h, by_byte);
    // Byte k of 16 rows to the masks of groups 2k (low nibbles) and 2k + 1
    // (high nibbles): byte m of a mask takes row 2m's nibble, then row 2m + 1's.
    for (int k = 0; k < 16; ++k)
      _mm_storeu_si128(reinterpret_cast<__m128i *>(half + 16 * k),
                       pack_row_nibbles(by_byte[k], _mm_srli_epi16(by_byte[k], 4)));
#else
    for (int n = 0; n < 32; ++n) {
      uint64_t mask = 0;
      for (int r = 0; r < 16; ++r)
        mask |= uint64_t{static_cast<uint8_t>(rows[16 * h + r][n / 2] >> (4 * (n % 2)) & 0xf)}
                << (4 * r);
      std::memcpy(half + 8 * n, &mask, sizeof(mask));
    }
#endif
  }
}

// Sign byte k of row r from a block's 512 sign bytes.
uint8_t untiled_byte(TileFormat format, const uint8_t *signs, int r, int k) {
  if (format != TileFormat::Q1NibbleMasks)
    return signs[32 * k + line_position(format, r)];
  const uint8_t *half = signs + 256 * (r / 16);
  const auto nibble = [&](int n) {
    uint64_t mask;
    std::memcpy(&mask, half + 8 * n, sizeof(mask));
    return static_cast<uint8_t>(mask >> (4 * (r % 16)) & 0xf);
  };
  return static_cast<uint8_t>(nibble(2 * k) | nibble(2 * k + 1) << 4);
}

} // namespace

void tile_q1_rows(const Q1Tile &shape, const uint8_t *rows, uint8_t *tile) {
  for (int64_t b = 0; b < shape.n_blocks; ++b) {
    uint8_t *out = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    const size_t in_block = static_cast<size_t>(b) * sizeof(BlockQ1_0);
    const uint8_t *signs[kQ1TileRows];
    for (int r = 0; r < kQ1TileRows; ++r) {
      const uint8_t *block = rows + static_cast<size_t>(r) * shape.row_bytes + in_block;
      std::memcpy(out + 2 * r, block, 2);
      signs[r] = block + 2;
    }
    if (shape.format != TileFormat::Q1NibbleMasks)
      tile_lines(shape.format, signs, out + kQ1TileScaleBytes);
    else
      tile_masks(signs, out + kQ1TileScaleBytes);
  }
}

void untile_q1_row(const Q1Tile &shape, const uint8_t *tile, int r, uint8_t *out) {
  for (int64_t b = 0; b < shape.n_blocks; ++b) {
    const uint8_t *in = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    uint8_t *block = out + static_cast<size_t>(b) * sizeof(BlockQ1_0);
    std::memcpy(block, in + 2 * r, 2);
    for (int k = 0; k < 16; ++k)
      block[2 + k] = untiled_byte(shape.format, in + kQ1TileScaleBytes, r, k);
  }
}

} // namespace bonsai::cpu
