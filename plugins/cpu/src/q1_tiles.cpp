#include "q1_tiles.hpp"

#include <cstring>

namespace bonsai::cpu {

void tile_q1_rows(const uint8_t *rows, int64_t n_blocks, size_t row_bytes, uint8_t *tile) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t *out = tile + static_cast<size_t>(b) * kQ1TileBlockBytes;
    for (int p = 0; p < kQ1TileRows; ++p) {
      const int r = q1_tile_row(p);
      const uint8_t *block =
          rows + static_cast<size_t>(r) * row_bytes + static_cast<size_t>(b) * sizeof(BlockQ1_0);
      std::memcpy(out + 2 * r, block, 2);
      for (int k = 0; k < 16; ++k)
        out[kQ1TileScaleBytes + static_cast<size_t>(32 * k + p)] = block[2 + k];
    }
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
