// A fake libcuda for tests: the Driver API functions the CUDA plugin calls,
// with device memory in host RAM and kernels run on the CPU by the fiber
// emulator. Select it with BONSAI_CUDA_DRIVER=<path of this library>; the
// plugin then runs end to end (context, modules, uploads, launches with the
// real argument packing, CUDA graph capture and replay) without a GPU. The
// PTX handed to cuModuleLoadData must come from NVRTC and name every kernel
// the plugin asks for. BONSAI_FAKE_CUDA_MEMORY sets the device size in bytes
// (default 8 GiB) to test out-of-memory paths.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_abi_decls.hpp"
#include "fiber_emulator.hpp"
// The plugin's kernels, compiled as C++.
#include "common_prelude.cuh"
#include "gemv_dp4a.cuh"
#include "layer.cuh"
#include "matmul.cuh"
#include "matmul_tc.cuh"

using namespace bonsai::cuda;

namespace {

constexpr CUresult kInvalidValue = 1;
constexpr CUresult kNotFound = 500;
constexpr CUresult kInvalidImage = 200;

struct FakeKernel {
  std::string name;
  std::vector<size_t> arg_sizes;
  std::function<void(void **, emu::Dim3, unsigned, size_t)> run;
};

template <class... A, size_t... I>
std::tuple<A...> unpack(void **params, std::index_sequence<I...>) {
  std::tuple<A...> args;
  (std::memcpy(&std::get<I>(args), params[I], sizeof(A)), ...);
  return args;
}

template <class... A> FakeKernel make_kernel(const char *name, void (*fn)(A...)) {
  FakeKernel k;
  k.name = name;
  k.arg_sizes = {sizeof(A)...};
  k.run = [fn](void **params, emu::Dim3 grid, unsigned block, size_t shared) {
    const auto args = unpack<A...>(params, std::index_sequence_for<A...>{});
    emu::launch(grid, block, shared, [&] { std::apply(fn, args); });
  };
  return k;
}

const std::map<std::string, FakeKernel> &kernel_table() {
  static const std::map<std::string, FakeKernel> table = [] {
    std::map<std::string, FakeKernel> t;
    auto add = [&t](FakeKernel k) { t.emplace(k.name, std::move(k)); };
// Each kernel under its own name (the PTX entry name is the symbol's).
#define BONSAI_FAKE(kernel) add(make_kernel(#kernel, kernel));
#define BONSAI_FAKE_TYPE(s)                                                                        \
  BONSAI_FAKE(bonsai_gemv_##s)                                                                     \
  BONSAI_FAKE(bonsai_gemm_##s)                                                                     \
  BONSAI_FAKE(bonsai_gemv_swiglu_##s)                                                              \
  BONSAI_FAKE(bonsai_gemm_swiglu_##s)                                                              \
  BONSAI_FAKE(bonsai_get_rows_##s)
// The tensor-core and int8 kernels of the 128-value block types.
#define BONSAI_FAKE_FAST_TYPE(s)                                                                   \
  BONSAI_FAKE(bonsai_gemm_tc_##s)                                                                  \
  BONSAI_FAKE(bonsai_gemm_swiglu_tc_##s)                                                           \
  BONSAI_FAKE(bonsai_gemv_dp4a_##s)                                                                \
  BONSAI_FAKE(bonsai_gemv_swiglu_dp4a_##s)
    BONSAI_FAKE_TYPE(f32)
    BONSAI_FAKE_TYPE(f16)
    BONSAI_FAKE_TYPE(bf16)
    BONSAI_FAKE_TYPE(q8_0)
    BONSAI_FAKE_TYPE(q1_0)
    BONSAI_FAKE_TYPE(q2_0)
    BONSAI_FAKE_FAST_TYPE(q1_0)
    BONSAI_FAKE_FAST_TYPE(q2_0)
    BONSAI_FAKE(bonsai_rmsnorm)
    BONSAI_FAKE(bonsai_qk_norm_rope)
    BONSAI_FAKE(bonsai_attention_split)
    BONSAI_FAKE(bonsai_attention_merge)
    BONSAI_FAKE(bonsai_argmax)
#undef BONSAI_FAKE_FAST_TYPE
#undef BONSAI_FAKE_TYPE
#undef BONSAI_FAKE
    return t;
  }();
  return table;
}

struct FakeModule {
  std::string ptx;
};

struct RecordedLaunch {
  const FakeKernel *kernel;
  emu::Dim3 grid;
  unsigned block;
  size_t shared;
  std::vector<std::vector<unsigned char>> args;
};

struct FakeGraph {
  std::vector<RecordedLaunch> launches;
};

struct State {
  std::mutex mutex; // the plugin may probe from several threads
  std::map<CUdeviceptr, size_t> allocations;
  size_t allocated = 0;
  FakeGraph *capturing = nullptr;
};

State &state() {
  static State s;
  return s;
}

size_t device_bytes() {
  const char *env = std::getenv("BONSAI_FAKE_CUDA_MEMORY");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : (size_t{8} << 30);
}

int fake_context_tag = 0;
int fake_stream_tag = 0;

void run_launch(const RecordedLaunch &launch) {
  std::vector<void *> params;
  for (const auto &arg : launch.args)
    params.push_back(const_cast<unsigned char *>(arg.data()));
  launch.kernel->run(params.data(), launch.grid, launch.block, launch.shared);
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuInit(unsigned) {
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult, const char **text) {
  *text = "FAKE_CUDA_ERROR";
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "error reported by the fake driver";
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal != 0)
    return kInvalidValue;
  *device = 0;
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  std::snprintf(name, static_cast<size_t>(length), "%s", "bonsai fake GPU (CPU emulation)");
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice) {
  *bytes = device_bytes();
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuDeviceGetAttribute(int *value, int attribute,
                                                                     CUdevice) {
  *value = attribute == kAttrComputeCapabilityMajor   ? 9
           : attribute == kAttrComputeCapabilityMinor ? 0
           : attribute == kAttrMultiprocessorCount    ? 4
                                                      : 0;
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRetain(CUcontext *context,
                                                                         CUdevice) {
  *context = reinterpret_cast<CUcontext>(&fake_context_tag);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) {
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuCtxPushCurrent_v2(CUcontext context) {
  return context == reinterpret_cast<CUcontext>(&fake_context_tag) ? kCudaSuccess : kInvalidValue;
}
__attribute__((visibility("default"))) CUresult cuCtxPopCurrent_v2(CUcontext *context) {
  if (context != nullptr)
    *context = reinterpret_cast<CUcontext>(&fake_context_tag);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemGetInfo_v2(size_t *free_bytes,
                                                                size_t *total_bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  *total_bytes = device_bytes();
  *free_bytes = *total_bytes - std::min(*total_bytes, state().allocated);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (bytes == 0)
    return kInvalidValue;
  if (state().allocated + bytes > device_bytes())
    return kCudaErrorOutOfMemory;
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (memory == nullptr)
    return kCudaErrorOutOfMemory;
  std::memset(memory, 0xA5, bytes); // device memory starts as garbage
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  state().allocations[*pointer] = bytes;
  state().allocated += bytes;
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemFree_v2(CUdeviceptr pointer) {
  std::lock_guard<std::mutex> lock(state().mutex);
  const auto it = state().allocations.find(pointer);
  if (it == state().allocations.end())
    return kInvalidValue;
  state().allocated -= it->second;
  state().allocations.erase(it);
  std::free(reinterpret_cast<void *>(pointer));
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult
cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, CUstream) {
  if (state().capturing != nullptr)
    return kInvalidValue; // copies are not captured by the plugin
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src,
                                                                     size_t bytes, CUstream) {
  if (state().capturing != nullptr)
    return kInvalidValue;
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value,
                                                                 size_t count, CUstream) {
  auto *words = reinterpret_cast<unsigned *>(dst);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuStreamCreate(CUstream *stream, unsigned) {
  *stream = reinterpret_cast<CUstream>(&fake_stream_tag);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuStreamDestroy_v2(CUstream) {
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuStreamSynchronize(CUstream) {
  return state().capturing != nullptr ? kInvalidValue : kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuModuleLoadData(CUmodule *module,
                                                                 const void *image) {
  const std::string ptx(static_cast<const char *>(image));
  if (ptx.find(".entry") == std::string::npos || ptx.find(".target") == std::string::npos)
    return kInvalidImage;
  *module = reinterpret_cast<CUmodule>(new FakeModule{ptx});
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuModuleUnload(CUmodule module) {
  delete reinterpret_cast<FakeModule *>(module);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult
cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  // The real driver finds only kernels the module's PTX defines.
  const auto *m = reinterpret_cast<const FakeModule *>(module);
  if (m->ptx.find(std::string(".entry ") + name + "(") == std::string::npos)
    return kNotFound;
  const auto it = kernel_table().find(name);
  if (it == kernel_table().end())
    return kNotFound;
  *function = reinterpret_cast<CUfunction>(const_cast<FakeKernel *>(&it->second));
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult
cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
               unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
               CUstream, void **params, void **extra) {
  // The limits of every GPU the plugin targets.
  if (block_y != 1 || block_z != 1 || block_x == 0 || block_x > 1024 || grid_x == 0 ||
      grid_y == 0 || grid_z == 0 || grid_y > 65535 || grid_z > 65535 || shared_bytes > 48 * 1024 ||
      extra != nullptr || params == nullptr)
    return kInvalidValue;
  RecordedLaunch launch;
  launch.kernel = reinterpret_cast<const FakeKernel *>(function);
  launch.grid = {grid_x, grid_y, grid_z};
  launch.block = block_x;
  launch.shared = shared_bytes;
  for (size_t i = 0; i < launch.kernel->arg_sizes.size(); ++i) {
    const auto *bytes = static_cast<const unsigned char *>(params[i]);
    launch.args.emplace_back(bytes, bytes + launch.kernel->arg_sizes[i]);
  }
  if (state().capturing != nullptr)
    state().capturing->launches.push_back(std::move(launch));
  else
    run_launch(launch);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuStreamBeginCapture_v2(CUstream, int) {
  if (state().capturing != nullptr)
    return kInvalidValue;
  state().capturing = new FakeGraph;
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuStreamEndCapture(CUstream, CUgraph *graph) {
  if (state().capturing == nullptr)
    return kInvalidValue;
  *graph = reinterpret_cast<CUgraph>(state().capturing);
  state().capturing = nullptr;
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult
cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long) {
  *exec = reinterpret_cast<CUgraphExec>(new FakeGraph(*reinterpret_cast<FakeGraph *>(graph)));
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuGraphLaunch(CUgraphExec exec, CUstream) {
  for (const RecordedLaunch &launch : reinterpret_cast<FakeGraph *>(exec)->launches)
    run_launch(launch);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuGraphExecDestroy(CUgraphExec exec) {
  delete reinterpret_cast<FakeGraph *>(exec);
  return kCudaSuccess;
}
__attribute__((visibility("default"))) CUresult cuGraphDestroy(CUgraph graph) {
  delete reinterpret_cast<FakeGraph *>(graph);
  return kCudaSuccess;
}

} // extern "C"
