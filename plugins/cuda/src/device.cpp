#include "device.hpp"

#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

double mib(size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

} // namespace

void check_cuda(const DriverApi &api, CUresult result, const char *what) {
  if (result != kCudaSuccess)
    fail(result == kCudaErrorOutOfMemory ? BONSAI_ERR_OUT_OF_MEMORY : BONSAI_ERR_INTERNAL,
         strformat("%s: %s", what, cuda_error_text(api, result).c_str()));
}

PrimaryContext::PrimaryContext(const DriverApi &api, int device_index) : api_(api) {
  int count = 0;
  check_cuda(api_, api_.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (device_index < 0 || device_index >= count)
    fail(BONSAI_ERR_NO_DEVICE,
         strformat("device index %d is out of range: %d CUDA device(s)", device_index, count));
  check_cuda(api_, api_.cuDeviceGet(&device_, device_index), "cuDeviceGet");
  check_cuda(api_, api_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
}

PrimaryContext::~PrimaryContext() {
  api_.cuDevicePrimaryCtxRelease(device_);
}

// A throwing constructor leaves ~Device unrun, but primary_ (a finished
// member) still releases its retain.
Device::Device(const DriverApi &api, int device_index) : api_(api), primary_(api, device_index) {
  CurrentContext current(*this);
  check(api_.cuStreamCreate(&stream_, kStreamNonBlocking), "cuStreamCreate");
}

Device::~Device() {
  // Not CurrentContext: a throwing push here would terminate the process.
  if (stream_ == nullptr || abandoned_ || api_.cuCtxPushCurrent(primary_.context()) != kCudaSuccess)
    return;
  api_.cuStreamSynchronize(stream_);
  api_.cuStreamDestroy(stream_);
  CUcontext popped = nullptr;
  api_.cuCtxPopCurrent(&popped);
}

void Device::check(CUresult result, const char *what) const {
  check_cuda(api_, result, what);
}

CUdeviceptr Device::allocate(size_t bytes, const std::string &what) const {
  CUdeviceptr pointer = 0;
  const CUresult result = api_.cuMemAlloc(&pointer, bytes == 0 ? 1 : bytes);
  if (result == kCudaErrorOutOfMemory) {
    const auto [free_bytes, total_bytes] = memory_info();
    fail(BONSAI_ERR_OUT_OF_MEMORY,
         strformat("out of device memory allocating %s: needed %zu bytes (%.1f MiB), %zu bytes "
                   "(%.1f MiB) free of %.1f MiB",
                   what.c_str(), bytes, mib(bytes), free_bytes, mib(free_bytes), mib(total_bytes)));
  }
  check(result, ("cuMemAlloc for " + what).c_str());
  return pointer;
}

void Device::release(CUdeviceptr pointer) const {
  if (pointer != 0 && !abandoned_)
    api_.cuMemFree(pointer);
}

void Device::upload(CUdeviceptr dst, const void *src, size_t bytes) const {
  if (bytes != 0)
    check(api_.cuMemcpyHtoDAsync(dst, src, bytes, stream_), "cuMemcpyHtoDAsync");
}

void Device::copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) const {
  if (bytes != 0)
    check(api_.cuMemcpyDtoDAsync(dst, src, bytes, stream_), "cuMemcpyDtoDAsync");
}

void Device::zero(CUdeviceptr dst, size_t bytes) const {
  if (bytes != 0)
    check(api_.cuMemsetD32Async(dst, 0, bytes / sizeof(uint32_t), stream_), "cuMemsetD32Async");
}

void Device::download(void *dst, CUdeviceptr src, size_t bytes) const {
  if (bytes != 0)
    check(api_.cuMemcpyDtoHAsync(dst, src, bytes, stream_), "cuMemcpyDtoHAsync");
  synchronize();
}

void Device::synchronize() const {
  check(api_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void Device::launch(CUfunction function, const LaunchShape &shape, void **params) const {
  const bool cooperative = shape.cooperative && api_.cuLaunchKernelEx != nullptr;
  if (!programmatic_launch_ && !cooperative) {
    check(api_.cuLaunchKernel(function, shape.grid_x, shape.grid_y, shape.grid_z, shape.block_x, 1,
                              1, shape.shared_bytes, stream_, params, nullptr),
          "cuLaunchKernel");
    return;
  }
  CUlaunchAttribute attrs[2]{};
  unsigned n_attrs = 0;
  if (programmatic_launch_) {
    attrs[n_attrs].id = kLaunchAttrProgrammaticStreamSerialization;
    attrs[n_attrs++].value.programmatic_stream_serialization_allowed = 1;
  }
  if (cooperative) {
    attrs[n_attrs].id = kLaunchAttrCooperative;
    attrs[n_attrs++].value.cooperative = 1;
  }
  CUlaunchConfig config{};
  config.grid_x = shape.grid_x;
  config.grid_y = shape.grid_y;
  config.grid_z = shape.grid_z;
  config.block_x = shape.block_x;
  config.block_y = 1;
  config.block_z = 1;
  config.shared_bytes = shape.shared_bytes;
  config.stream = stream_;
  config.attrs = attrs;
  config.n_attrs = n_attrs;
  check(api_.cuLaunchKernelEx(&config, function, params, nullptr), "cuLaunchKernelEx");
}

std::pair<size_t, size_t> Device::memory_info() const {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (api_.cuMemGetInfo(&free_bytes, &total_bytes) != kCudaSuccess)
    return {0, 0};
  return {free_bytes, total_bytes};
}

CurrentContext::CurrentContext(const Device &device) : device_(device) {
  device_.check(device_.api().cuCtxPushCurrent(device_.context()), "cuCtxPushCurrent");
  pushed_ = true;
}

CurrentContext::~CurrentContext() {
  if (pushed_) {
    CUcontext popped = nullptr;
    device_.api().cuCtxPopCurrent(&popped);
  }
}

DeviceBuffer::DeviceBuffer(const Device &device, size_t bytes, const std::string &what)
    : device_(&device), pointer_(device.allocate(bytes, what)), bytes_(bytes) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    device_ = other.device_;
    pointer_ = other.pointer_;
    bytes_ = other.bytes_;
    other.pointer_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (device_ != nullptr && pointer_ != 0)
    device_->release(pointer_);
  pointer_ = 0;
  bytes_ = 0;
}

} // namespace bonsai::cuda
