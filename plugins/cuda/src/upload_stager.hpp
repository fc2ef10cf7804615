#pragma once
// Weight uploads through two pinned staging buffers: the CPU fills (repacks
// into) one while the copy engine sends the other, and an upload returns as
// soon as its bytes are staged, its last copy still in flight, so the next
// weight's repacking overlaps it. The host's own bytes are never read after
// upload() returns. Where pinned memory cannot be had, the bytes go through
// pageable memory and each copy is waited for.
#include <cstdint>
#include <functional>

#include "device.hpp"
#include "logger.hpp"

namespace bonsai::cuda {

class UploadStager {
public:
  // Writes bytes [offset, offset + n) of what is uploaded into `out`.
  using Fill = std::function<void(uint8_t *out, uint64_t offset, uint64_t n)>;

  // `chunk_bytes` per staging buffer (option upload_chunk_kib), allocated
  // at the first upload.
  UploadStager(const Device &device, Logger log, uint64_t chunk_bytes);
  // Waits for the copies in flight, then frees the buffers (the device's
  // context must be current). Never throws.
  ~UploadStager();
  UploadStager(const UploadStager &) = delete;
  UploadStager &operator=(const UploadStager &) = delete;

  // Sends `bytes` bytes, made by `fill` chunk by chunk, to `dst`. Throws
  // PluginError when a copy cannot be queued.
  void upload(CUdeviceptr dst, uint64_t bytes, const Fill &fill);
  // Blocks until every queued copy has landed.
  void wait();

private:
  struct Buffer {
    uint8_t *memory = nullptr;
    CUevent done = nullptr; // recorded after the copy out of `memory`
    bool in_flight = false;
  };
  void allocate();
  void release() noexcept;
  // The next buffer, once its previous copy has landed.
  Buffer &next_free();
  void send(CUdeviceptr dst, uint64_t bytes, const Fill &fill);

  const Device &device_;
  Logger log_;
  const uint64_t chunk_bytes_;
  Buffer buffers_[2];
  int next_ = 0;
  bool allocated_ = false;
  bool pinned_ = false;
};

} // namespace bonsai::cuda
