#pragma once
// Q1_0 weights in 32-row tiles, the layout the AVX2 table kernel reads
// (kernels/avx2_q1_tables.cpp). A context whose kernel set asks for it
// (KernelSet::rows_q1_tables) stores its Q1_0 matrices this way instead of the
// GGUF row order: the table kernel then loads one byte of 32 rows at once
// and looks up all 32 with one shuffle per 4 weights.
//
// Tile T holds rows 32T..32T+31 and takes the bytes of those 32 GGUF rows
// (32 * row_bytes), block after block; block b of a tile is 576 bytes:
//   [0, 64)    the 32 rows' f16 scales, row i at 2i;
//   [64, 576)  16 lines of 32 bytes: line k holds sign byte k of every row,
//              row q1_tile_row(p) at position p.
#include <cstddef>
#include <cstdint>

#include "bonsai/core/formats.hpp"

namespace bonsai::cpu {

inline constexpr int64_t kQ1TileRows = 32;
inline constexpr size_t kQ1TileScaleBytes = kQ1TileRows * 2;
inline constexpr size_t kQ1TileBlockBytes = kQ1TileRows * sizeof(BlockQ1_0); // 576
// Widest rows that are tiled, so that one row gathered back from a tile
// (Weight::natural_row: an embedding row of a tied head) fits a fixed
// buffer of kQ1TileMaxRowBytes.
inline constexpr int64_t kQ1TileMaxCols = 32768;
inline constexpr size_t kQ1TileMaxRowBytes = kQ1TileMaxCols / 128 * sizeof(BlockQ1_0);

// The row at position p (0..31) of a sign line, and its inverse. The kernel
// turns looked-up bytes into int16 by interleaving (positions 0-7, 16-23 in
// one register, 8-15, 24-31 in the other) and those into int32 by even and
// odd int16 lanes; this order makes its four int32 vectors rows 0-7, 8-15,
// 16-23 and 24-31.
constexpr int q1_tile_row(int p) {
  const int high_register = (p / 8) % 2, upper = p / 16, odd = p % 2, pair = (p % 8) / 2;
  return 8 * (2 * high_register + odd) + 4 * upper + pair;
}
constexpr int q1_tile_position(int r) {
  const int vector = r / 8, upper = (r % 8) / 4, pair = r % 4;
  return 16 * upper + 8 * (vector / 2) + 2 * pair + vector % 2;
}

// Whether a Q1_0 matrix of this shape is stored in tiles.
inline bool q1_tileable(int64_t rows, int64_t cols) {
  return rows > 0 && rows % kQ1TileRows == 0 && cols > 0 && cols <= kQ1TileMaxCols;
}

// One tile (32 GGUF rows of row_bytes, n_blocks blocks each) to tile order.
void tile_q1_rows(const uint8_t *rows, int64_t n_blocks, size_t row_bytes, uint8_t *tile);

// GGUF row r (0..31) of a tile, row_bytes bytes.
void untile_q1_row(const uint8_t *tile, int64_t n_blocks, int r, uint8_t *out);

} // namespace bonsai::cpu
