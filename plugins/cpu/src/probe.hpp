#pragma once
#include "bonsai/bonsai_backend.h"

namespace bonsai::cpu {
// What the CPU plugin reports as bonsai_device_info.preference: below a GPU
// plugin's, so that `--backend auto` takes a usable GPU first.
inline constexpr uint32_t kCpuPreference = 100;
// Fills the device description of the host CPU (always one device).
void fill_device_info(bonsai_device_info &info);
} // namespace bonsai::cpu
