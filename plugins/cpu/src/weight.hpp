#pragma once
// An uploaded weight: GGUF bytes exactly as stored, borrowed from the host
// (zero copy, when it promises they outlive the context) or copied.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "bonsai/bonsai_backend.h"
#include "bonsai/core/formats.hpp"

namespace bonsai::cpu {

struct Weight {
  GgmlType type = GgmlType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;
  const uint8_t *data = nullptr;    // rows * row_bytes bytes
  std::unique_ptr<uint8_t[]> owned; // set when the bytes were copied
  std::string name;                 // for messages

  const uint8_t *row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
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

} // namespace bonsai::cpu
