#include "q1_tiles.hpp"

#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace bonsai::cpu {

#if defined(__SSE2__)
namespace {

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

} // namespace
#endif

void tile_q1_rows(const uint8_t *rows, int64_t n_blocks, size_t row_bytes, uint8_t *tile) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t *out = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    const size_t in_block = static_cast<size_t>(b) * sizeof(BlockQ1_0);
    for (int r = 0; r < kQ1TileRows; ++r)
      std::memcpy(out + 2 * r, rows + static_cast<size_t>(r) * row_bytes + in_block, 2);
#if defined(__SSE2__)
    // The sign bytes: positions 16h..16h+15 of every line from 16 rows.
    for (int h = 0; h < 2; ++h) {
      __m128i x[16];
      for (int j = 0; j < 16; ++j)
        x[j] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(
            rows + static_cast<size_t>(q1_tile_row(16 * h + j)) * row_bytes + in_block + 2));
      transpose16(x);
      for (int k = 0; k < 16; ++k)
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + kQ1TileScaleBytes + 32 * k + 16 * h),
                         x[bit_reversed4(k)]);
    }
#else
    for (int p = 0; p < kQ1TileRows; ++p) {
      const uint8_t *block = rows + static_cast<size_t>(q1_tile_row(p)) * row_bytes + in_block;
      for (int k = 0; k < 16; ++k)
        out[kQ1TileScaleBytes + static_cast<size_t>(32 * k + p)] = block[2 + k];
    }
#endif
  }
}

void untile_q1_row(const uint8_t *tile, int64_t n_blocks, int r, uint8_t *out) {
  const int p = q1_tile_position(r);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t *in = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    uint8_t *block = out + static_cast<size_t>(b) * sizeof(BlockQ1_0);
    std::memcpy(block, in + 2 * r, 2);
    for (int k = 0; k < 16; ++k)
      block[2 + k] = in[kQ1TileScaleBytes + static_cast<size_t>(32 * k + p)];
  }
}

} // namespace bonsai::cpu
