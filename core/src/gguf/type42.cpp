#include "type42.hpp"

#include <algorithm>

#include "bonsai/core/formats.hpp"

namespace bonsai::gguf {
namespace {

constexpr uint32_t kType42 = 42;

struct Fit {
  bool g128 = false;
  bool g64 = false;
};

// Bytes of n elements in a layout, or UINT64_MAX when n is not whole blocks.
uint64_t layout_bytes(int64_t n, int64_t block, uint64_t block_bytes) {
  if (n % block != 0)
    return UINT64_MAX;
  return static_cast<uint64_t>(n / block) * block_bytes;
}

bool fits(uint64_t bytes, uint64_t room, uint64_t alignment) {
  return bytes != UINT64_MAX && bytes <= room && room - bytes < alignment;
}

} // namespace

std::string resolve_type42(std::vector<TensorInfo> &tensors, uint64_t section_bytes,
                           uint64_t alignment) {
  std::vector<uint64_t> offsets;
  for (const TensorInfo &t : tensors)
    offsets.push_back(t.offset);
  std::sort(offsets.begin(), offsets.end());

  std::vector<Fit> fit(tensors.size());
  const TensorInfo *decided[2] = {nullptr, nullptr}; // first tensor that decided g128 / g64
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo &t = tensors[i];
    if (t.type_id != kType42)
      continue;
    const auto next = std::upper_bound(offsets.begin(), offsets.end(), t.offset);
    const uint64_t end = next == offsets.end() ? section_bytes : *next;
    const uint64_t room = end >= t.offset ? end - t.offset : 0;
    const int64_t n = t.n_elements();
    const uint64_t b128 = layout_bytes(n, kQ2BlockSize, sizeof(BlockQ2_0));
    const uint64_t b64 = layout_bytes(n, kQ2G64BlockSize, sizeof(BlockQ2_0G64));
    fit[i] = {fits(b128, room, alignment), fits(b64, room, alignment)};
    if (!fit[i].g128 && !fit[i].g64)
      return "tensor '" + t.name + "' has type 42 (Q2_0) but its " + std::to_string(room) +
             " bytes of room fit neither layout: 128 per block (PrismML) takes " +
             (b128 == UINT64_MAX ? std::string("whole blocks of 128") : std::to_string(b128)) +
             " bytes, 64 per block (mainline llama.cpp) " +
             (b64 == UINT64_MAX ? std::string("whole blocks of 64") : std::to_string(b64)) +
             ": truncated file or bad offset";
    if (fit[i].g128 != fit[i].g64) {
      const int which = fit[i].g64 ? 1 : 0;
      if (!decided[which])
        decided[which] = &t;
    }
  }
  if (decided[0] && decided[1])
    return "type 42 (Q2_0) tensors use both layouts: '" + decided[0]->name +
           "' is 128 per block (PrismML), '" + decided[1]->name +
           "' 64 per block (mainline llama.cpp); a file must use one";
  const GgmlType file_layout = decided[1] ? GgmlType::Q2_0_G64 : GgmlType::Q2_0;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].type_id == kType42)
      tensors[i].encoding = fit[i].g128 && fit[i].g64
                                ? file_layout
                                : (fit[i].g64 ? GgmlType::Q2_0_G64 : GgmlType::Q2_0);
  return "";
}

} // namespace bonsai::gguf
