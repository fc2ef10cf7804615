#pragma once
// One CUDA device as a context uses it: the retained primary context, a
// stream, checked driver calls and device memory with clear out-of-memory
// messages.
#include <cstddef>
#include <string>
#include <utility>

#include "driver_library.hpp"

namespace bonsai::cuda {

// Throws PluginError "<what>: <CUDA error text>" unless `result` is success
// (OUT_OF_MEMORY for the driver's out-of-memory error, else INTERNAL).
void check_cuda(const DriverApi &api, CUresult result, const char *what);

// One reference on a device's primary context, released with the object, so
// that no error path after cuDevicePrimaryCtxRetain can leak it.
class PrimaryContext {
public:
  // Throws PluginError (NO_DEVICE when the driver has no such device).
  PrimaryContext(const DriverApi &api, int device_index);
  ~PrimaryContext();
  PrimaryContext(const PrimaryContext &) = delete;
  PrimaryContext &operator=(const PrimaryContext &) = delete;

  CUdevice device() const { return device_; }
  CUcontext context() const { return context_; }

private:
  const DriverApi &api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

// The grid, block and dynamic shared memory of a kernel launch.
struct LaunchShape {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1;
  unsigned shared_bytes = 0;
  // All blocks resident at once (blocks that wait for each other), where the
  // driver has cuLaunchKernelEx; else an ordinary launch.
  bool cooperative = false;
};

class Device {
public:
  // Retains the primary context of `device_index` and creates a non-blocking
  // stream. Throws PluginError (NO_DEVICE when the driver has no such device).
  Device(const DriverApi &api, int device_index);
  // Never throws: when the context cannot be made current (driver shut
  // down, context broken) the stream is left to the driver.
  ~Device();
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  const DriverApi &api() const { return api_; }
  CUstream stream() const { return stream_; }
  CUcontext context() const { return primary_.context(); }
  CUdevice device() const { return primary_.device(); }

  // Throws PluginError(INTERNAL) "<what>: <CUDA error text>" unless success.
  void check(CUresult result, const char *what) const;

  // Called when the context can no longer be made current: from then on
  // release() and module unloads skip the driver (which reclaims the memory
  // with the primary context) instead of calling it with no context current.
  void abandon() const { abandoned_ = true; }
  bool abandoned() const { return abandoned_; }

  // cuMemAlloc; OUT_OF_MEMORY names `what`, the bytes needed and free.
  CUdeviceptr allocate(size_t bytes, const std::string &what) const;
  void release(CUdeviceptr pointer) const;

  void upload(CUdeviceptr dst, const void *src, size_t bytes) const;
  // Device-to-device, queued on the stream after the kernels before it.
  void copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) const;
  // Sets `bytes` (a multiple of 4) to zero, queued on the stream.
  void zero(CUdeviceptr dst, size_t bytes) const;
  // Copies and waits for the stream (the result is then in host memory).
  void download(void *dst, CUdeviceptr src, size_t bytes) const;
  void synchronize() const;
  // Launches `function` on the stream, with programmatic dependent launch
  // when it is on. Throws PluginError naming cuLaunchKernel(Ex).
  void launch(CUfunction function, const LaunchShape &shape, void **params) const;
  // Programmatic dependent launch (option pdl): every kernel may start
  // while the one before it finishes; the kernels wait for it themselves
  // (griddepcontrol.wait, kernels/common_prelude.cuh). Needs
  // cuLaunchKernelEx; the caller checks the device is sm_90+.
  void set_programmatic_launch(bool on) { programmatic_launch_ = on; }
  bool programmatic_launch() const { return programmatic_launch_; }
  // (free, total) bytes of the device now.
  std::pair<size_t, size_t> memory_info() const;

private:
  const DriverApi &api_;
  PrimaryContext primary_;
  CUstream stream_ = nullptr;
  mutable bool abandoned_ = false;
  bool programmatic_launch_ = false;
};

// Makes the device's context current on this thread for a scope (each ABI
// call may come from a different thread).
class CurrentContext {
public:
  // Throws PluginError when cuCtxPushCurrent fails.
  explicit CurrentContext(const Device &device);
  ~CurrentContext();
  CurrentContext(const CurrentContext &) = delete;
  CurrentContext &operator=(const CurrentContext &) = delete;

private:
  const Device &device_;
  bool pushed_ = false;
};

// Owned device memory, freed with the object.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(const Device &device, size_t bytes, const std::string &what);
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CUdeviceptr get() const { return pointer_; }
  size_t bytes() const { return bytes_; }
  void reset();

private:
  const Device *device_ = nullptr;
  CUdeviceptr pointer_ = 0;
  size_t bytes_ = 0;
};

} // namespace bonsai::cuda
