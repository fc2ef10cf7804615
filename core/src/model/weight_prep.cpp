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
    out.nbytes = row_bytes(type, tensor.cols()) * static_cast<size_t>(tensor.rows());
    out.owned = std::make_unique_for_overwrite<uint8_t[]>(out.nbytes);
    convert_rows(tensor.type, type, tensor.data, out.owned.get(), tensor.cols(), tensor.rows(),
                 tensor.name);
    out.data = out.owned.get();
    return out;
  }
  throw Error("tensor '" + tensor.name + "' is " + type_description(tensor.type) +
              "; the plugin takes none of the encodings it converts to exactly (" + tried + ")");
}

} // namespace bonsai
