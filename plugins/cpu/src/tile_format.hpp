#pragma once
// How a context stores a quantized matrix: in GGUF rows, or in 32-row tiles
// arranged for one kernel (q1_tiles.hpp). Tiles take the same bytes as the
// rows they replace; only Q1_0 is tiled so far.
#include <cstddef>
#include <cstdint>

namespace bonsai::cpu {

enum class TileFormat : uint8_t {
  None,          // GGUF rows
  Q1SignLines,   // Q1_0 for the AVX2 table kernel
  Q1NibbleMasks, // Q1_0 for the AVX-512 mask kernel
  Q1RowLines,    // Q1_0 for the AArch64 table kernel
};

inline constexpr int64_t kTileRows = 32;
// Widest rows that are tiled, so that one row gathered back from a tile
// (Weight::natural_row: an embedding row of a tied head) fits a fixed buffer
// of kTileMaxRowBytes (18 bytes per 128 inputs: Q1_0).
inline constexpr int64_t kTileMaxCols = 32768;
inline constexpr size_t kTileMaxRowBytes = kTileMaxCols / 128 * 18;

} // namespace bonsai::cpu
