#include "probe.hpp"

#include <cstdio>
#include <cstring>

#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

void copy_text(char *dst, size_t size, const std::string &text) {
  std::snprintf(dst, size, "%s", text.c_str());
}

} // namespace

std::string query_device(const DriverLoad &driver, int device_index, DeviceFacts *facts) {
  if (driver.api == nullptr)
    return driver.error;
  const DriverApi &api = *driver.api;
  CUresult result = api.cuDeviceGetCount(&facts->count);
  if (result != kCudaSuccess)
    return "cuDeviceGetCount failed: " + cuda_error_text(api, result);
  if (facts->count <= 0)
    return "no CUDA device (cuDeviceGetCount returned 0)";
  if (device_index < 0 || device_index >= facts->count)
    return strformat("device index %d is out of range: %d CUDA device(s)", device_index,
                     facts->count);
  CUdevice device = 0;
  if ((result = api.cuDeviceGet(&device, device_index)) != kCudaSuccess)
    return "cuDeviceGet failed: " + cuda_error_text(api, result);
  char name[128] = {};
  if ((result = api.cuDeviceGetName(name, sizeof(name) - 1, device)) != kCudaSuccess)
    return "cuDeviceGetName failed: " + cuda_error_text(api, result);
  facts->name = name;
  size_t total = 0;
  if ((result = api.cuDeviceTotalMem(&total, device)) != kCudaSuccess)
    return "cuDeviceTotalMem failed: " + cuda_error_text(api, result);
  facts->total_bytes = total;
  const std::pair<int, int *> attributes[] = {
      {kAttrComputeCapabilityMajor, &facts->compute_major},
      {kAttrComputeCapabilityMinor, &facts->compute_minor},
      {kAttrMultiprocessorCount, &facts->multiprocessors},
      {kAttrMaxGridDimY, &facts->max_grid_y},
      {kAttrMaxSharedPerBlockOptin, &facts->shared_per_block_optin}};
  for (const auto &[attribute, value] : attributes)
    if ((result = api.cuDeviceGetAttribute(value, attribute, device)) != kCudaSuccess)
      return strformat("cuDeviceGetAttribute(%d) failed: %s", attribute,
                       cuda_error_text(api, result).c_str());
  return {};
}

bonsai_status probe_devices(const DriverLoad &driver, bonsai_device_info *info) {
  try {
    DeviceFacts facts;
    const std::string why_not = query_device(driver, 0, &facts);
    if (!why_not.empty()) {
      info->device_count = 0;
      copy_text(info->detail, sizeof info->detail, why_not);
      return BONSAI_ERR_NO_DEVICE;
    }
    info->device_count = static_cast<uint32_t>(facts.count);
    copy_text(info->name, sizeof info->name, facts.name);
    info->total_memory_bytes = facts.total_bytes;
    info->free_memory_bytes = 0; // needs a context; reported by create_context's log
    info->compute_major = static_cast<uint32_t>(facts.compute_major);
    info->compute_minor = static_cast<uint32_t>(facts.compute_minor);
    int driver_version = 0;
    driver.api->cuDriverGetVersion(&driver_version);
    copy_text(info->detail, sizeof info->detail,
              strformat("sm_%d%d, %d SMs, driver API %s, kernels JIT-compiled by NVRTC",
                        facts.compute_major, facts.compute_minor, facts.multiprocessors,
                        cuda_version_text(driver_version).c_str()));
    info->preference = kCudaPreference;
    return BONSAI_OK;
  } catch (...) {
    copy_text(info->detail, sizeof info->detail, "internal error while probing");
    return BONSAI_ERR_INTERNAL;
  }
}

} // namespace bonsai::cuda
