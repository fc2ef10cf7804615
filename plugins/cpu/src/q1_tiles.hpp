#pragma once
// Q1_0 weights in 32-row tiles, the layouts the tile kernels read. A context
// whose kernel set has a tiled Q1_0 kernel (KernelSet::tiled) stores its
// Q1_0 matrices this way instead of the GGUF row order, in that kernel's
// format, so that one load brings the signs of many rows at once.
//
// Tile T holds rows 32T..32T+31 and takes the bytes of those 32 GGUF rows
// (32 * row_bytes), block after block; block b of a tile is 576 bytes, its
// first 64 the 32 rows' f16 scales (row i at 2i). The other 512 hold the
// 32 x 16 sign bytes, arranged per format:
//   Q1SignLines (the AVX2 table kernel, kernels/avx2_q1_tables.cpp): 16 lines
//     of 32 bytes, line k at 64 + 32k holding sign byte k of every row, row
//     q1_tile_row(p) at position p;
//   Q1RowLines (the AArch64 table kernel, kernels/neon_q1_tables.cpp): the
//     same 16 lines of 32 bytes with row p at position p;
//   Q1NibbleMasks (the AVX-512 kernel, kernels/avx512_q1_tiles.cpp): for each
//     half h (rows 16h..16h+15) and group n of 4 inputs (n < 32), the 64-bit
//     word at 64 + 256h + 8n holds at bits 4r..4r+3 the sign bits 4n..4n+3 of
//     row 16h + r: one mask that expands to 4 weights of 16 rows.
#include <cstddef>
#include <cstdint>

#include "bonsai/core/formats.hpp"
#include "tile_format.hpp"

namespace bonsai::cpu {

inline constexpr int64_t kQ1TileRows = kTileRows;
inline constexpr size_t kQ1TileScaleBytes = kQ1TileRows * 2;
inline constexpr size_t kQ1TileBlockBytes = kQ1TileRows * sizeof(BlockQ1_0); // 576
inline constexpr int64_t kQ1TileMaxCols = kTileMaxCols;
// A tiled row gathered back must fit Weight::natural_row's callers' buffers.
static_assert(kQ1TileMaxCols / 128 * sizeof(BlockQ1_0) <= kTileMaxRowBytes);

// Q1SignLines: the row at position p (0..31) of a sign line, and its inverse. The kernel
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

// fn(tile, r) for each tile of n_rows tiled rows (a multiple of 32) starting
// at `tiles`, r its first row; row_bytes is a GGUF row's.
template <class Fn>
void for_each_q1_tile(const uint8_t *tiles, size_t row_bytes, int64_t n_rows, Fn &&fn) {
  const size_t tile_bytes = static_cast<size_t>(kQ1TileRows) * row_bytes;
  for (int64_t r = 0; r < n_rows; r += kQ1TileRows)
    fn(tiles + static_cast<size_t>(r / kQ1TileRows) * tile_bytes, r);
}

// Whether a Q1_0 matrix of this shape is stored in tiles.
inline bool q1_tileable(int64_t rows, int64_t cols) {
  return rows > 0 && rows % kQ1TileRows == 0 && cols > 0 && cols <= kQ1TileMaxCols;
}

// Where one tile is and what it holds.
struct Q1Tile {
  TileFormat format = TileFormat::Q1SignLines; // Q1SignLines, Q1RowLines or Q1NibbleMasks
  int64_t n_blocks = 0;                        // per row
  size_t row_bytes = 0;                        // of a GGUF row: n_blocks * 18
};

// One tile (32 GGUF rows of row_bytes, row_bytes apart) to tile order.
void tile_q1_rows(const Q1Tile &shape, const uint8_t *rows, uint8_t *tile);

// GGUF row r (0..31) of a tile, row_bytes bytes.
void untile_q1_row(const Q1Tile &shape, const uint8_t *tile, int r, uint8_t *out);

} // namespace bonsai::cpu
