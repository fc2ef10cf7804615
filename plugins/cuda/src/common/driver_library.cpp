#include "driver_library.hpp"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "dynamic_library.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

struct DriverEntry {
  DriverApi api;
  std::string error;
};

// Resolves every entry of DriverApi; returns the first missing name or "".
std::string resolve_all(void *handle, DriverApi &api) {
  const std::pair<const char *, bool> results[] = {
#define BONSAI_RESOLVE(field, symbol) {symbol, resolve_symbol(handle, symbol, &api.field)}
      BONSAI_RESOLVE(cuInit, "cuInit"),
      BONSAI_RESOLVE(cuDriverGetVersion, "cuDriverGetVersion"),
      BONSAI_RESOLVE(cuGetErrorName, "cuGetErrorName"),
      BONSAI_RESOLVE(cuGetErrorString, "cuGetErrorString"),
      BONSAI_RESOLVE(cuDeviceGetCount, "cuDeviceGetCount"),
      BONSAI_RESOLVE(cuDeviceGet, "cuDeviceGet"),
      BONSAI_RESOLVE(cuDeviceGetName, "cuDeviceGetName"),
      BONSAI_RESOLVE(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
      BONSAI_RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
      BONSAI_RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
      BONSAI_RESOLVE(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
      BONSAI_RESOLVE(cuCtxPushCurrent, "cuCtxPushCurrent_v2"),
      BONSAI_RESOLVE(cuCtxPopCurrent, "cuCtxPopCurrent_v2"),
      BONSAI_RESOLVE(cuMemGetInfo, "cuMemGetInfo_v2"),
      BONSAI_RESOLVE(cuMemAlloc, "cuMemAlloc_v2"),
      BONSAI_RESOLVE(cuMemFree, "cuMemFree_v2"),
      BONSAI_RESOLVE(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
      BONSAI_RESOLVE(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
      BONSAI_RESOLVE(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
      BONSAI_RESOLVE(cuMemsetD32Async, "cuMemsetD32Async"),
      BONSAI_RESOLVE(cuStreamCreate, "cuStreamCreate"),
      BONSAI_RESOLVE(cuStreamDestroy, "cuStreamDestroy_v2"),
      BONSAI_RESOLVE(cuStreamSynchronize, "cuStreamSynchronize"),
      BONSAI_RESOLVE(cuMemAllocHost, "cuMemAllocHost_v2"),
      BONSAI_RESOLVE(cuMemFreeHost, "cuMemFreeHost"),
      BONSAI_RESOLVE(cuEventCreate, "cuEventCreate"),
      BONSAI_RESOLVE(cuEventDestroy, "cuEventDestroy_v2"),
      BONSAI_RESOLVE(cuEventRecord, "cuEventRecord"),
      BONSAI_RESOLVE(cuEventSynchronize, "cuEventSynchronize"),
      BONSAI_RESOLVE(cuModuleLoadData, "cuModuleLoadData"),
      BONSAI_RESOLVE(cuModuleUnload, "cuModuleUnload"),
      BONSAI_RESOLVE(cuModuleGetFunction, "cuModuleGetFunction"),
      BONSAI_RESOLVE(cuFuncGetAttribute, "cuFuncGetAttribute"),
      BONSAI_RESOLVE(cuFuncSetAttribute, "cuFuncSetAttribute"),
      BONSAI_RESOLVE(cuLaunchKernel, "cuLaunchKernel"),
      BONSAI_RESOLVE(cuStreamBeginCapture, "cuStreamBeginCapture_v2"),
      BONSAI_RESOLVE(cuStreamEndCapture, "cuStreamEndCapture"),
      BONSAI_RESOLVE(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
      BONSAI_RESOLVE(cuGraphLaunch, "cuGraphLaunch"),
      BONSAI_RESOLVE(cuGraphExecDestroy, "cuGraphExecDestroy"),
      BONSAI_RESOLVE(cuGraphDestroy, "cuGraphDestroy"),
#undef BONSAI_RESOLVE
  };
  for (const auto &[name, found] : results)
    if (!found)
      return name;
  if (!resolve_symbol(handle, "cuLaunchKernelEx", &api.cuLaunchKernelEx))
    api.cuLaunchKernelEx = nullptr;
  if (!resolve_symbol(handle, "cuEventElapsedTime", &api.cuEventElapsedTime))
    api.cuEventElapsedTime = nullptr;
  return {};
}

std::unique_ptr<DriverEntry> open_driver(const std::string &library) {
  auto entry = std::make_unique<DriverEntry>();
  const OpenedLibrary opened = open_first_library({library});
  if (opened.handle == nullptr) {
    entry->error = strformat("%s not found: %s", library.c_str(), opened.error.c_str());
    return entry;
  }
  if (const std::string missing = resolve_all(opened.handle, entry->api); !missing.empty()) {
    entry->error = strformat("%s lacks the function %s (driver older than CUDA 11.4?)",
                             library.c_str(), missing.c_str());
    return entry;
  }
  if (const CUresult result = entry->api.cuInit(0); result != kCudaSuccess)
    entry->error = strformat("cuInit failed: %s", cuda_error_text(entry->api, result).c_str());
  return entry;
}

// Names for the errors a probe meets most, for when the driver cannot name
// them itself (the toolkit's stub library answers every call with 34).
const char *known_error_name(CUresult result) {
  switch (result) {
  case 2:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case 34:
    return "CUDA_ERROR_STUB_LIBRARY";
  case 35:
    return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case 100:
    return "CUDA_ERROR_NO_DEVICE";
  case 999:
    return "CUDA_ERROR_UNKNOWN";
  default:
    return "CUDA error";
  }
}

const char *known_error_text(CUresult result) {
  switch (result) {
  case 34:
    return "the loaded libcuda is the CUDA toolkit's stub, not a real driver";
  case 35:
    return "the installed NVIDIA driver is older than the CUDA runtime needs";
  case 100:
    return "no CUDA-capable device is detected";
  default:
    return "no description";
  }
}

} // namespace

std::string driver_library_name() {
  const char *env = std::getenv("BONSAI_CUDA_DRIVER");
  return env != nullptr && *env != '\0' ? env : "libcuda.so.1";
}

DriverLoad load_driver(const std::string &library) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DriverEntry>> entries;
  std::lock_guard<std::mutex> lock(mutex);
  auto &entry = entries[library];
  if (!entry)
    entry = open_driver(library);
  DriverLoad load;
  load.library = library;
  load.error = entry->error;
  load.api = entry->error.empty() ? &entry->api : nullptr;
  return load;
}

std::string cuda_error_text(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(result, &name) != kCudaSuccess)
    name = nullptr;
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(result, &text) != kCudaSuccess)
    text = nullptr;
  return strformat("%s (%d): %s", name != nullptr ? name : known_error_name(result), result,
                   text != nullptr ? text : known_error_text(result));
}

std::string cuda_version_text(int driver_version) {
  return strformat("%d.%d", driver_version / 1000, driver_version % 1000 / 10);
}

} // namespace bonsai::cuda
