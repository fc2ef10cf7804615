#pragma once
// An uploaded weight: GGUF bytes exactly as stored, borrowed from the host
// (zero copy, when it promises they outlive the context) or copied; or, for
// Q1_0 under kernels that read rows in pairs, repacked (q1_pairs.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "bonsai/bonsai_backend.h"
#include "bonsai/core/formats.hpp"
#include <oneapi/tbb/task_arena.h>

#include "q1_pairs.hpp"

namespace bonsai::cpu {

struct Weight {
  GgmlType type = GgmlType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;
  const uint8_t *data = nullptr;    // rows * row_bytes bytes; null when repacked
  std::unique_ptr<uint8_t[]> owned; // set when the bytes were copied
  std::unique_ptr<uint8_t[]> pairs; // set when repacked in row pairs (then `data` is null)
  Q1PairShape pair_shape;           // the pairs' geometry
  std::string name;                 // for messages

  // What a row kernel reads from row r0 on (even when repacked: the pair
  // holding it), and the bytes from one row, or pair, to the next.
  const uint8_t *kernel_rows(int64_t r0) const;
  size_t kernel_stride() const;
  void dequantize(int64_t r, float *out) const; // row r as cols floats, any storage
  std::string label() const;                    // "'blk.0.attn_q.weight' (q1_0, 2048 x 2048)"
};

// How a context stores what it is given: whether Q1_0 is repacked in row
// pairs (the kernel set asks for it), and the arena that does the repacking.
struct WeightStorage {
  bool q1_row_pairs = false;
  oneapi::tbb::task_arena *arena = nullptr;
};

// Types this plugin accepts: F32, F16, BF16, Q8_0, Q1_0, Q2_0, Q2_0_G64 (the
// host converts the other encodings exactly to one of these).
bool is_supported_type(uint32_t type_id);

// Validates a descriptor (already size-checked) and builds the weight.
// Throws PluginError: INVALID_ARGUMENT for bad shapes/sizes/pointers,
// UNSUPPORTED for an unknown type.
std::unique_ptr<Weight> make_weight(const bonsai_weight_desc &desc, const WeightStorage &storage);

} // namespace bonsai::cpu
