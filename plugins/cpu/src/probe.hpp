#pragma once
#include "bonsai/bonsai_backend.h"

namespace bonsai::cpu {
// Fills the device description of the host CPU (always one device).
void fill_device_info(bonsai_device_info &info);
} // namespace bonsai::cpu
