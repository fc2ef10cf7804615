#pragma once
// Choosing the encoding a plugin receives for a stored weight, and
// converting to it exactly when the plugin cannot take the stored one.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "bonsai/core/formats.hpp"
#include "bonsai/core/model_spec.hpp"

namespace bonsai {

struct PreparedWeight {
  GgmlType type = GgmlType::F32;    // the encoding handed to the plugin
  const uint8_t *data = nullptr;    // the file's bytes, or owned's
  size_t nbytes = 0;                // rows * row_bytes(type, cols)
  std::unique_ptr<uint8_t[]> owned; // converted bytes; null when passed as stored

  bool converted() const { return owned != nullptr; }
};

// Takes the first of upload_candidates(tensor.type) that `accepts` (a
// plugin's supports_type) says yes to, converting row by row when it is not
// the stored encoding. Throws bonsai::Error naming the tensor when the plugin
// takes none of them, or when the data refuses the conversion.
PreparedWeight prepare_weight(const TensorView &tensor,
                              const std::function<bool(GgmlType)> &accepts);

} // namespace bonsai
