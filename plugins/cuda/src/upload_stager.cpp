#include "upload_stager.hpp"

#include <algorithm>
#include <cstdlib>

#include "plugin_error.hpp"

namespace bonsai::cuda {

UploadStager::UploadStager(const Device &device, Logger log, uint64_t chunk_bytes)
    : device_(device), log_(std::move(log)), chunk_bytes_(chunk_bytes) {}

UploadStager::~UploadStager() {
  release();
}

void UploadStager::allocate() {
  allocated_ = true;
  const DriverApi &api = device_.api();
  pinned_ = true;
  for (Buffer &b : buffers_) {
    void *memory = nullptr;
    if (api.cuMemAllocHost(&memory, chunk_bytes_) != kCudaSuccess ||
        api.cuEventCreate(&b.done, kEventDisableTiming) != kCudaSuccess) {
      if (memory != nullptr)
        api.cuMemFreeHost(memory);
      pinned_ = false;
      break;
    }
    b.memory = static_cast<uint8_t *>(memory);
  }
  if (!pinned_) {
    release();
    allocated_ = true;
    log_.info("weight upload: no pinned staging memory; copying from pageable memory, "
              "one chunk at a time");
    for (Buffer &b : buffers_)
      b.memory = static_cast<uint8_t *>(std::malloc(chunk_bytes_));
    if (buffers_[0].memory == nullptr || buffers_[1].memory == nullptr)
      fail(BONSAI_ERR_OUT_OF_MEMORY, "weight upload: cannot allocate its staging buffers");
  }
}

void UploadStager::release() noexcept {
  const DriverApi &api = device_.api();
  for (Buffer &b : buffers_) {
    if (b.in_flight && !device_.abandoned())
      api.cuEventSynchronize(b.done);
    if (b.done != nullptr && !device_.abandoned())
      api.cuEventDestroy(b.done);
    if (b.memory != nullptr) {
      if (!pinned_)
        std::free(b.memory);
      else if (!device_.abandoned())
        api.cuMemFreeHost(b.memory);
    }
    b = Buffer{};
  }
  allocated_ = false;
  pinned_ = false;
}

UploadStager::Buffer &UploadStager::next_free() {
  Buffer &b = buffers_[next_];
  next_ = 1 - next_;
  if (b.in_flight) {
    device_.check(device_.api().cuEventSynchronize(b.done), "cuEventSynchronize");
    b.in_flight = false;
  }
  return b;
}

void UploadStager::upload(CUdeviceptr dst, uint64_t bytes, const Fill &fill) {
  if (!allocated_)
    allocate();
  try {
    send(dst, bytes, fill);
  } catch (...) {
    // The caller frees `dst` next: let the copies already queued land first.
    for (Buffer &b : buffers_)
      if (b.in_flight && device_.api().cuEventSynchronize(b.done) == kCudaSuccess)
        b.in_flight = false;
    throw;
  }
}

void UploadStager::send(CUdeviceptr dst, uint64_t bytes, const Fill &fill) {
  for (uint64_t offset = 0; offset < bytes; offset += chunk_bytes_) {
    const uint64_t n = std::min(chunk_bytes_, bytes - offset);
    Buffer &b = next_free();
    fill(b.memory, offset, n);
    device_.upload(dst + offset, b.memory, n);
    if (pinned_) {
      device_.check(device_.api().cuEventRecord(b.done, device_.stream()), "cuEventRecord");
      b.in_flight = true;
    } else {
      device_.synchronize(); // pageable: the buffer is reused next
    }
  }
}

void UploadStager::wait() {
  for (Buffer &b : buffers_)
    if (b.in_flight) {
      device_.check(device_.api().cuEventSynchronize(b.done), "cuEventSynchronize");
      b.in_flight = false;
    }
}

} // namespace bonsai::cuda
