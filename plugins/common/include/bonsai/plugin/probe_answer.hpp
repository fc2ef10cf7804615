#pragma once
// probe() for every plugin: the same checks of the host's struct and the same
// copy-back, so that a 1.0 host (shorter struct) and a newer one (longer)
// both get exactly the bytes their struct has.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "bonsai/bonsai_backend.h"

namespace bonsai::plugin {

// ABI 1.0's bonsai_device_info ended with `detail`; 1.1 appended preference.
inline constexpr size_t kDeviceInfoV10Size = offsetof(bonsai_device_info, preference);

// Answers probe(info): NULL, or a struct_size below ABI 1.0's, is
// INVALID_ARGUMENT. `fill(bonsai_device_info &)` writes a zeroed full-size
// copy and returns the status (OK or NO_DEVICE); the host's struct gets the
// bytes it has room for, its struct_size untouched. Anything thrown is
// INTERNAL.
template <class Fill> bonsai_status answer_probe(bonsai_device_info *info, Fill &&fill) noexcept {
  if (info == nullptr || info->struct_size < kDeviceInfoV10Size)
    return BONSAI_ERR_INVALID_ARGUMENT;
  try {
    bonsai_device_info filled{};
    const bonsai_status status = fill(filled);
    const size_t room = std::min<size_t>(info->struct_size, sizeof(filled));
    constexpr size_t kSkip = sizeof(filled.struct_size);
    std::memcpy(reinterpret_cast<char *>(info) + kSkip,
                reinterpret_cast<const char *>(&filled) + kSkip, room - kSkip);
    return status;
  } catch (...) {
    return BONSAI_ERR_INTERNAL;
  }
}

} // namespace bonsai::plugin
