#include "q1_tiles.hpp"

#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace bonsai::cpu {

namespace {
#if defined(__SSE2__)

// x[k] = byte k of the 16 inputs (16 bytes each): four rounds of interleaving
// by 1, 2, 4 and 8 bytes leave byte k of every input in x[bit-reversed k].
inline void transpose16(__m128i x[16]) {
  for (int round = 0; round < 4; ++round) {
    __m128i y[16];
    for (int i = 0; i < 8; ++i) {
      const __m128i a = x[2 * i], b = x[2 * i + 1];
      switch (round) {
      case 0:
        y[i] = _mm_unpacklo_epi8(a, b), y[i + 8] = _mm_unpackhi_epi8(a, b);
        break;
      case 1:
        y[i] = _mm_unpacklo_epi16(a, b), y[i + 8] = _mm_unpackhi_epi16(a, b);
        break;
      case 2:
        y[i] = _mm_unpacklo_epi32(a, b), y[i + 8] = _mm_unpackhi_epi32(a, b);
        break;
      default:
        y[i] = _mm_unpacklo_epi64(a, b), y[i + 8] = _mm_unpackhi_epi64(a, b);
      }
    }
    for (int i = 0; i < 16; ++i)
      x[i] = y[i];
  }
}

constexpr int bit_reversed4(int k) {
  return ((k & 1) << 3) | ((k & 2) << 1) | ((k & 4) >> 1) | ((k & 8) >> 3);
}

#endif

// The sign bytes of 16 rows (rows16[j]: row j's block at its 16 sign bytes)
// as 16 vectors, vector k holding byte k of row j at position j.
#if defined(__SSE2__)
void sign_bytes_by_row(const uint8_t *const rows16[16], __m128i by_byte[16]) {
  __m128i x[16];
  for (int j = 0; j < 16; ++j)
    x[j] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(rows16[j]));
  transpose16(x);
  for (int k = 0; k < 16; ++k)
    by_byte[k] = x[bit_reversed4(k)];
}
#endif

void tile_lines(const uint8_t *const rows[kQ1TileRows], uint8_t *lines) {
#if defined(__SSE2__)
  // Positions 16h..16h+15 of every line from 16 rows.
  for (int h = 0; h < 2; ++h) {
    const uint8_t *rows16[16];
    for (int j = 0; j < 16; ++j)
      rows16[j] = rows[q1_tile_row(16 * h + j)];
    __m128i by_byte[16];
    sign_bytes_by_row(rows16, by_byte);
    for (int k = 0; k < 16; ++k)
      _mm_storeu_si128(reinterpret_cast<__m128i *>(lines + 32 * k + 16 * h), by_byte[k]);
  }
#else
  for (int p = 0; p < kQ1TileRows; ++p)
    for (int k = 0; k < 16; ++k)
      lines[32 * k + p] = rows[q1_tile_row(p)][k];
#endif
}

void tile_masks(const uint8_t *const rows[kQ1TileRows], uint8_t *masks) {
  for (int h = 0; h < 2; ++h) {
    uint8_t *half = masks + 256 * h;
#if defined(__SSE2__)
    __m128i by_byte[16];
    sign_bytes_by_row(rows + 16 * h, by_byte);
    // Byte k of 16 rows as 8 words (row 2m low, 2m + 1 high) to the masks of
    // groups 2k (low nibbles) and 2k + 1 (high nibbles): byte m of a mask
    // takes the nibble of row 2m, then that of row 2m + 1.
    const __m128i low4 = _mm_set1_epi16(0x000f), high4 = _mm_set1_epi16(0x00f0);
    for (int k = 0; k < 16; ++k) {
      const __m128i w = by_byte[k];
      const __m128i low =
          _mm_or_si128(_mm_and_si128(w, low4), _mm_and_si128(_mm_srli_epi16(w, 4), high4));
      const __m128i high = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(w, 4), low4),
                                        _mm_and_si128(_mm_srli_epi16(w, 8), high4));
      _mm_storeu_si128(reinterpret_cast<__m128i *>(half + 16 * k), _mm_packus_epi16(low, high));
    }
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
uint8_t untiled_byte(Q1TileFormat format, const uint8_t *signs, int r, int k) {
  if (format == Q1TileFormat::SignLines)
    return signs[32 * k + q1_tile_position(r)];
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
    if (shape.format == Q1TileFormat::SignLines)
      tile_lines(signs, out + kQ1TileScaleBytes);
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
