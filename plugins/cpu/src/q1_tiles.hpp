#pragma once
// Q1_0 weights in 32-row tiles, the layout the AVX2 table kernel reads
// (kernels/avx2_q1_tables.cpp). A context whose kernel set asks for it
// (KernelSet::tile_q1) stores its Q1_0 matrices this way instead of the
// GGUF row order: the table kernel then loads one byte of 32 rows at once
// and looks up all 32 with one shuffle per 4 weights.
//
// Tile T holds rows 32T..32T+31 and takes the bytes of those 32 GGUF rows
// (32 * row_bytes), block after block; block b of a tile is 576 bytes:
//   [0, 64)    the 32 rows' f16 scales, row i at 2i;
//   [64, 576)  16 lines of 32 bytes: line k holds sign byte k of every row,
//              row q1_tile_row(p) at position p.
// The row order inside a line is what the kernel's byte-to-int16 unpacking
// turns back into rows 0..31 (positions 8..15 and 16..23 trade places).
#include <cstddef>
#include <cstdint>

#include "bonsai/core/formats.hpp"

namespace bonsai::cpu {

inline constexpr int64_t kQ1TileRows = 32;
inline constexpr size_t kQ1TileScaleBytes = kQ1TileRows * 2;
inline constexpr size_t kQ1TileBlockBytes = kQ1TileRows * sizeof(BlockQ1_0); // 576
// Widest rows that are tiled: the kernels that read tiles for many tokens
// turn a tile back into GGUF rows on the stack (32 rows of 4,608 bytes).
inline constexpr int64_t kQ1TileMaxCols = 32768;

// The row at position p (0..31) of a sign line; the map is its own inverse.
constexpr int q1_tile_row(int p) {
  return (p >= 8 && p < 16) ? p + 8 : (p >= 16 && p < 24) ? p - 8 : p;
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
