#include "plugins/hidden_states.hpp"

#include <cstddef>

namespace bonsai::host {

const bonsai_hidden_states_extension *hidden_states_extension(const bonsai_backend_api &api) {
  // ABI 1.3's size of the extension: a later plugin's is longer, never shorter.
  constexpr size_t kV13Size = offsetof(bonsai_hidden_states_extension, hidden_states) +
                              sizeof(bonsai_hidden_states_extension::hidden_states);
  const bonsai_extension *e = bonsai_find_extension(&api, BONSAI_EXTENSION_HIDDEN_STATES);
  if (e == nullptr || e->struct_size < kV13Size)
    return nullptr;
  const auto *hidden = reinterpret_cast<const bonsai_hidden_states_extension *>(e);
  return hidden->hidden_states != nullptr ? hidden : nullptr;
}

} // namespace bonsai::host
