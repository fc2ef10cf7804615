#pragma once
// The few CUDA Driver API and NVRTC types, constants and function signatures
// this plugin uses, declared here so the plugin builds without the CUDA
// toolkit. Values follow the documented ABI of cuda.h / nvrtc.h (CUDA 11.4 and
// later); the functions are resolved at run time with dlsym, never linked.
#include <cstddef>
#include <cstdint>

namespace bonsai::cuda {

// ---- Driver API ----
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_opaque;
struct CUmod_opaque;
struct CUfunc_opaque;
struct CUstream_opaque;
struct CUgraph_opaque;
struct CUgraphExec_opaque;
struct CUevent_opaque;
using CUcontext = CUctx_opaque *;
using CUmodule = CUmod_opaque *;
using CUfunction = CUfunc_opaque *;
using CUstream = CUstream_opaque *;
using CUgraph = CUgraph_opaque *;
using CUgraphExec = CUgraphExec_opaque *;
using CUevent = CUevent_opaque *;

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorOutOfMemory = 2;
inline constexpr CUresult kCudaErrorNoDevice = 100;

inline constexpr int kAttrMaxGridDimY = 6;
inline constexpr int kAttrMultiprocessorCount = 16;
inline constexpr int kAttrMaxSharedPerBlockOptin = 97;
// Shared memory a block gets without opting in (static + dynamic bytes).
inline constexpr int kDefaultSharedPerBlock = 48 * 1024;
// CUfunction_attribute values.
inline constexpr int kFuncAttrSharedSizeBytes = 1; // the kernel's static shared bytes
inline constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;
inline constexpr unsigned kStreamNonBlocking = 0x1;
inline constexpr int kStreamCaptureModeThreadLocal = 1;
inline constexpr unsigned kEventDisableTiming = 0x2;
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: the launch may
// overlap the kernel before it in the stream, each thread resolving the
// dependency itself with griddepcontrol.wait (sm_90+).
inline constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;
// CU_LAUNCH_ATTRIBUTE_COOPERATIVE: every block of the grid is resident at
// once, or the launch fails (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE).
inline constexpr int kLaunchAttrCooperative = 2;

// CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union.
struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmatic_stream_serialization_allowed;
    int cooperative;
  } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute as cuda.h lays it out");

// CUlaunchConfig of cuLaunchKernelEx (CUDA 11.8+).
struct CUlaunchConfig {
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_bytes;
  CUstream stream;
  CUlaunchAttribute *attrs;
  unsigned n_attrs;
};
static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig as cuda.h lays it out");

// Signatures, named after the exported symbol (the _v2 variants are the ones
// cuda.h maps the plain names to).
using cuInit_t = CUresult (*)(unsigned flags);
using cuDriverGetVersion_t = CUresult (*)(int *version);
using cuGetErrorName_t = CUresult (*)(CUresult error, const char **text);
using cuGetErrorString_t = CUresult (*)(CUresult error, const char **text);
using cuDeviceGetCount_t = CUresult (*)(int *count);
using cuDeviceGet_t = CUresult (*)(CUdevice *device, int ordinal);
using cuDeviceGetName_t = CUresult (*)(char *name, int length, CUdevice device);
using cuDeviceTotalMem_v2_t = CUresult (*)(size_t *bytes, CUdevice device);
using cuDeviceGetAttribute_t = CUresult (*)(int *value, int attribute, CUdevice device);
using cuDevicePrimaryCtxRetain_t = CUresult (*)(CUcontext *context, CUdevice device);
using cuDevicePrimaryCtxRelease_v2_t = CUresult (*)(CUdevice device);
using cuCtxPushCurrent_v2_t = CUresult (*)(CUcontext context);
using cuCtxPopCurrent_v2_t = CUresult (*)(CUcontext *context);
using cuMemGetInfo_v2_t = CUresult (*)(size_t *free_bytes, size_t *total_bytes);
using cuMemAlloc_v2_t = CUresult (*)(CUdeviceptr *pointer, size_t bytes);
using cuMemFree_v2_t = CUresult (*)(CUdeviceptr pointer);
using cuMemcpyHtoDAsync_v2_t = CUresult (*)(CUdeviceptr dst, const void *src, size_t bytes,
                                            CUstream stream);
using cuMemcpyDtoHAsync_v2_t = CUresult (*)(void *dst, CUdeviceptr src, size_t bytes,
                                            CUstream stream);
using cuMemcpyDtoDAsync_v2_t = CUresult (*)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                            CUstream stream);
using cuMemsetD32Async_t = CUresult (*)(CUdeviceptr dst, unsigned value, size_t count,
                                        CUstream stream);
using cuStreamCreate_t = CUresult (*)(CUstream *stream, unsigned flags);
using cuStreamDestroy_v2_t = CUresult (*)(CUstream stream);
using cuStreamSynchronize_t = CUresult (*)(CUstream stream);
using cuMemAllocHost_v2_t = CUresult (*)(void **pointer, size_t bytes);
using cuMemFreeHost_t = CUresult (*)(void *pointer);
using cuEventCreate_t = CUresult (*)(CUevent *event, unsigned flags);
using cuEventDestroy_v2_t = CUresult (*)(CUevent event);
using cuEventRecord_t = CUresult (*)(CUevent event, CUstream stream);
using cuEventSynchronize_t = CUresult (*)(CUevent event);
using cuEventElapsedTime_t = CUresult (*)(float *milliseconds, CUevent start, CUevent end);
using cuModuleLoadData_t = CUresult (*)(CUmodule *module, const void *image);
using cuModuleUnload_t = CUresult (*)(CUmodule module);
using cuModuleGetFunction_t = CUresult (*)(CUfunction *function, CUmodule module, const char *name);
using cuFuncGetAttribute_t = CUresult (*)(int *value, int attribute, CUfunction function);
using cuFuncSetAttribute_t = CUresult (*)(CUfunction function, int attribute, int value);
using cuLaunchKernel_t = CUresult (*)(CUfunction function, unsigned grid_x, unsigned grid_y,
                                      unsigned grid_z, unsigned block_x, unsigned block_y,
                                      unsigned block_z, unsigned shared_bytes, CUstream stream,
                                      void **params, void **extra);
using cuLaunchKernelEx_t = CUresult (*)(const CUlaunchConfig *config, CUfunction function,
                                        void **params, void **extra);
using cuStreamBeginCapture_v2_t = CUresult (*)(CUstream stream, int mode);
using cuStreamEndCapture_t = CUresult (*)(CUstream stream, CUgraph *graph);
using cuGraphInstantiateWithFlags_t = CUresult (*)(CUgraphExec *exec, CUgraph graph,
                                                   unsigned long long flags);
using cuGraphLaunch_t = CUresult (*)(CUgraphExec exec, CUstream stream);
using cuGraphExecDestroy_t = CUresult (*)(CUgraphExec exec);
using cuGraphDestroy_t = CUresult (*)(CUgraph graph);

// ---- NVRTC ----
using nvrtcResult = int;
struct nvrtcProgram_opaque;
using nvrtcProgram = nvrtcProgram_opaque *;
inline constexpr nvrtcResult kNvrtcSuccess = 0;

using nvrtcVersion_t = nvrtcResult (*)(int *major, int *minor);
using nvrtcGetErrorString_t = const char *(*)(nvrtcResult result);
using nvrtcCreateProgram_t = nvrtcResult (*)(nvrtcProgram *program, const char *source,
                                             const char *name, int n_headers,
                                             const char *const *headers,
                                             const char *const *include_names);
using nvrtcDestroyProgram_t = nvrtcResult (*)(nvrtcProgram *program);
using nvrtcCompileProgram_t = nvrtcResult (*)(nvrtcProgram program, int n_options,
                                              const char *const *options);
using nvrtcGetPTXSize_t = nvrtcResult (*)(nvrtcProgram program, size_t *size);
using nvrtcGetPTX_t = nvrtcResult (*)(nvrtcProgram program, char *ptx);
using nvrtcGetCUBINSize_t = nvrtcResult (*)(nvrtcProgram program, size_t *size);
using nvrtcGetCUBIN_t = nvrtcResult (*)(nvrtcProgram program, char *cubin);
using nvrtcGetProgramLogSize_t = nvrtcResult (*)(nvrtcProgram program, size_t *size);
using nvrtcGetProgramLog_t = nvrtcResult (*)(nvrtcProgram program, char *log);

} // namespace bonsai::cuda
