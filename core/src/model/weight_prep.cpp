#include "bonsai/core/weight_prep.hpp"

#include <string>

#include "bonsai/core/convert.hpp"
#include "bonsai/core/error.hpp"

namespace bonsai {

PreparedWeight prepare_weight(const TensorView &tensor,
                              const std::function<bool(GgmlType)> &accepts) {
  const std::vector<GgmlType> candidates = upload_candidates(tensor.type);
  std::string tried;
  for (const GgmlType type : candidates) {
    if (!accepts(type)) {
      tried += (tried.empty() ? "" : ", ") + std::string(type_name(static_cast<uint32_t>(type)));
      continue;
    }
    PreparedWeight out;
    out.type = type;
    if (type == tensor.type) {
      out.data = tensor.data;
      out.nbytes = tensor.nbytes;
      return out;
    }
    const size_t src_row = row_bytes(tensor.type, tensor.cols());
    const size_t dst_row = row_bytes(type, tensor.cols());
    out.nbytes = dst_row * static_cast<size_t>(tensor.rows());
    out.owned = std::make_unique_for_overwrite<uint8_t[]>(out.nbytes);
    for (int64_t r = 0; r < tensor.rows(); ++r) {
      try {
        convert_row(tensor.type, type, tensor.data + static_cast<size_t>(r) * src_row,
                    out.owned.get() + static_cast<size_t>(r) * dst_row, tensor.cols());
      } catch (const Error &e) {
        throw Error("tensor '" + tensor.name + "' row " + std::to_string(r) + ": " + e.what());
      }
    }
    out.data = out.owned.get();
    return out;
  }
  throw Error("tensor '" + tensor.name + "' is " + type_description(tensor.type) +
              "; the plugin takes none of the encodings it converts to exactly (" + tried + ")");
}

} // namespace bonsai
