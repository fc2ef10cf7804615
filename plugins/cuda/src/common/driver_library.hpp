#pragma once
// The CUDA driver (libcuda.so.1), loaded with dlopen and initialised once per
// process. Every failure is a sentence saying why there is no usable driver,
// so the probe can report NO_DEVICE with a reason instead of crashing.
#include <string>

#include "cuda_abi_decls.hpp"

namespace bonsai::cuda {

// The Driver API functions the plugin calls.
struct DriverApi {
  cuInit_t cuInit = nullptr;
  cuDriverGetVersion_t cuDriverGetVersion = nullptr;
  cuGetErrorName_t cuGetErrorName = nullptr;
  cuGetErrorString_t cuGetErrorString = nullptr;
  cuDeviceGetCount_t cuDeviceGetCount = nullptr;
  cuDeviceGet_t cuDeviceGet = nullptr;
  cuDeviceGetName_t cuDeviceGetName = nullptr;
  cuDeviceTotalMem_v2_t cuDeviceTotalMem = nullptr;
  cuDeviceGetAttribute_t cuDeviceGetAttribute = nullptr;
  cuDevicePrimaryCtxRetain_t cuDevicePrimaryCtxRetain = nullptr;
  cuDevicePrimaryCtxRelease_v2_t cuDevicePrimaryCtxRelease = nullptr;
  cuCtxPushCurrent_v2_t cuCtxPushCurrent = nullptr;
  cuCtxPopCurrent_v2_t cuCtxPopCurrent = nullptr;
  cuMemGetInfo_v2_t cuMemGetInfo = nullptr;
  cuMemAlloc_v2_t cuMemAlloc = nullptr;
  cuMemFree_v2_t cuMemFree = nullptr;
  cuMemcpyHtoDAsync_v2_t cuMemcpyHtoDAsync = nullptr;
  cuMemcpyDtoHAsync_v2_t cuMemcpyDtoHAsync = nullptr;
  cuMemcpyDtoDAsync_v2_t cuMemcpyDtoDAsync = nullptr;
  cuMemsetD32Async_t cuMemsetD32Async = nullptr;
  cuStreamCreate_t cuStreamCreate = nullptr;
  cuStreamDestroy_v2_t cuStreamDestroy = nullptr;
  cuStreamSynchronize_t cuStreamSynchronize = nullptr;
  cuMemAllocHost_v2_t cuMemAllocHost = nullptr;
  cuMemFreeHost_t cuMemFreeHost = nullptr;
  cuEventCreate_t cuEventCreate = nullptr;
  cuEventDestroy_v2_t cuEventDestroy = nullptr;
  cuEventRecord_t cuEventRecord = nullptr;
  cuEventSynchronize_t cuEventSynchronize = nullptr;
  cuModuleLoadData_t cuModuleLoadData = nullptr;
  cuModuleUnload_t cuModuleUnload = nullptr;
  cuModuleGetFunction_t cuModuleGetFunction = nullptr;
  cuFuncGetAttribute_t cuFuncGetAttribute = nullptr;
  cuFuncSetAttribute_t cuFuncSetAttribute = nullptr;
  cuLaunchKernel_t cuLaunchKernel = nullptr;
  // Optional (CUDA 11.8+): NULL where the driver lacks it, and launches with
  // attributes (programmatic dependent launch) are then not offered.
  cuLaunchKernelEx_t cuLaunchKernelEx = nullptr;
  // Optional: NULL where the driver lacks it, and the decode tuner then
  // cannot time its candidates (decode=auto keeps its fixed choice).
  cuEventElapsedTime_t cuEventElapsedTime = nullptr;
  cuStreamBeginCapture_v2_t cuStreamBeginCapture = nullptr;
  cuStreamEndCapture_t cuStreamEndCapture = nullptr;
  cuGraphInstantiateWithFlags_t cuGraphInstantiateWithFlags = nullptr;
  cuGraphLaunch_t cuGraphLaunch = nullptr;
  cuGraphExecDestroy_t cuGraphExecDestroy = nullptr;
  cuGraphDestroy_t cuGraphDestroy = nullptr;
};

struct DriverLoad {
  const DriverApi *api = nullptr; // NULL when the driver is unusable
  std::string library;            // the file name tried (e.g. "libcuda.so.1")
  std::string error;              // why `api` is NULL, e.g. "libcuda.so.1 not found: ..."
};

// The library to load: $BONSAI_CUDA_DRIVER when set (tests point it at a
// missing file or the toolkit's stub), else "libcuda.so.1".
std::string driver_library_name();

// Loads `library`, resolves every function and calls cuInit(0), once per
// library name per process. Thread-safe; the result stays valid for the life
// of the process.
DriverLoad load_driver(const std::string &library);
inline DriverLoad load_driver() {
  return load_driver(driver_library_name());
}

// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
std::string cuda_error_text(const DriverApi &api, CUresult result);

// The CUDA version cuDriverGetVersion reports, as major * 100 + minor
// (12040 -> 1204), so versions compare as integers; and as text ("12.4").
inline int cuda_version_number(int driver_version) {
  return driver_version / 1000 * 100 + driver_version % 1000 / 10;
}
std::string cuda_version_text(int driver_version);

} // namespace bonsai::cuda
