#pragma once
// An uploaded weight: the GGUF bytes in device memory, rows contiguous;
// unchanged for F32/F16/BF16/Q8_0, in the planar layout for Q1_0/Q2_0
// (weight_repack.hpp), which the kernels decode directly.
#include <cstdint>
#include <string>

#include "bonsai/bonsai_backend.h"
#include "device.hpp"
#include "upload_stager.hpp"

namespace bonsai::cuda {

// Block geometry of a ggml type the plugin accepts.
struct TypeLayout {
  uint32_t type = 0;
  int block_values = 0; // weights per block
  int block_bytes = 0;  // bytes per block
};

// Layout of `type`, or false when the plugin has no kernels for it.
bool type_layout(uint32_t type, TypeLayout *layout);

struct Weight {
  TypeLayout layout;
  int64_t rows = 0;
  int64_t cols = 0;
  std::string name;
  DeviceBuffer data;

  std::string label() const { return name.empty() ? "weight" : "'" + name + "'"; }
};

// Validates `desc` (type, shape, byte count) and sends its bytes (planar
// types repacked) to the device through `stager`; when it returns, the
// host's bytes have all been read, the last copies may be in flight. Throws
// PluginError.
Weight upload_weight(const Device &device, UploadStager &stager, const bonsai_weight_desc &desc);

} // namespace bonsai::cuda
