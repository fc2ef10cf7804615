#pragma once
// Device discovery through the dynamically loaded driver.
#include <string>

#include "bonsai/bonsai_backend.h"
#include "driver_library.hpp"

namespace bonsai::cuda {

struct DeviceFacts {
  int count = 0;
  std::string name;
  uint64_t total_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  int max_grid_y = 0;             // most blocks along a launch grid's y (65,535 today)
  int shared_per_block_optin = 0; // most shared bytes a block may opt in to (static + dynamic)
};

// Facts about `device_index`. Returns an empty string on success, else why
// there is no usable device ("libcuda.so.1 not found: ...", "cuInit failed:
// ...", "no CUDA device (cuDeviceGetCount returned 0)", ...).
std::string query_device(const DriverLoad &driver, int device_index, DeviceFacts *facts);

// bonsai_device_info.preference when a device is usable: above the CPU
// plugin's 100.
inline constexpr uint32_t kCudaPreference = 200;

// The ABI probe: OK with device 0's facts, or NO_DEVICE with the reason in
// info->detail. Never throws.
bonsai_status probe_devices(const DriverLoad &driver, bonsai_device_info *info);

} // namespace bonsai::cuda
