#pragma once
// An uploaded weight: GGUF bytes exactly as stored, borrowed from the host
// (zero copy, when it promises they outlive the context) or copied.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <oneapi/tbb/task_arena.h>

#include "bonsai/bonsai_backend.h"
#include "bonsai/core/formats.hpp"
#include "tile_format.hpp"

namespace bonsai::cpu {

// Anonymous memory mapped at a 2 MiB boundary, so that a kernel that backs
// every mapping with transparent huge pages can use them for tiled weights
// (read in long sweeps). Unmapped on destruction.
class HugeAlignedBuffer {
public:
  explicit HugeAlignedBuffer(size_t bytes); // throws PluginError when out of memory
  ~HugeAlignedBuffer();
  HugeAlignedBuffer(const HugeAlignedBuffer &) = delete;
  HugeAlignedBuffer &operator=(const HugeAlignedBuffer &) = delete;
  uint8_t *data() const { return data_; }

private:
  void *mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  uint8_t *data_ = nullptr;
};

struct Weight {
  GgmlType type = GgmlType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;
  const uint8_t *data = nullptr;    // rows * row_bytes bytes
  std::unique_ptr<uint8_t[]> owned; // set when the bytes were copied
  std::string name;                 // for messages
  // Unless None, stored in 32-row tiles of this format (q1_tiles.hpp), not in
  // GGUF row order: row(r) is then the start of r's tile for r a multiple of
  // 32, and a row's own bytes come from natural_row.
  TileFormat tiled = TileFormat::None;
  std::unique_ptr<HugeAlignedBuffer> tiles; // the tiled bytes, when tiled

  const uint8_t *row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  // Row r in GGUF order: row(r) itself, or for a tiled weight its bytes
  // gathered into `scratch` (row_bytes bytes).
  const uint8_t *natural_row(int64_t r, uint8_t *scratch) const;
  size_t nbytes() const { return static_cast<size_t>(rows) * row_bytes; }
  std::string label() const; // "'blk.0.attn_q.weight' (q1_0, 2048 x 2048)"
};

// Types this plugin accepts: F32, F16, BF16, Q8_0, Q1_0, Q2_0, Q2_0_G64 (the
// host converts the other encodings exactly to one of these).
bool is_supported_type(uint32_t type_id);

// Validates a descriptor (already size-checked) and builds the weight.
// Throws PluginError: INVALID_ARGUMENT for bad shapes/sizes/pointers,
// UNSUPPORTED for an unknown type.
std::unique_ptr<Weight> make_weight(const bonsai_weight_desc &desc);

// Rewrites a weight into 32-row tiles of `format` (an owned copy, tiles in
// parallel on `arena`) when its type is the format's and its shape allows
// (q1_tileable). Returns whether it did.
bool tile_weight(Weight &w, TileFormat format, oneapi::tbb::task_arena &arena);

} // namespace bonsai::cpu
