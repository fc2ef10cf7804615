#include "weight.hpp"

#include <cstring>

#include "plugin_error.hpp"
#include "weight_repack.hpp"

namespace bonsai::cuda {

bool type_layout(uint32_t type, TypeLayout *layout) {
  switch (type) {
  case 0: // F32
    *layout = {type, 1, 4};
    return true;
  case 1:  // F16
  case 30: // BF16
    *layout = {type, 1, 2};
    return true;
  case 8: // Q8_0
    *layout = {type, 32, 34};
    return true;
  case 41: // Q1_0
    *layout = {type, 128, 18};
    return true;
  case 42: // Q2_0
    *layout = {type, 128, 34};
    return true;
  default:
    return false;
  }
}

Weight upload_weight(const Device &device, UploadStager &stager, const bonsai_weight_desc &desc) {
  Weight w;
  w.name = desc.name != nullptr ? desc.name : "";
  if (!type_layout(desc.type, &w.layout))
    fail(BONSAI_ERR_UNSUPPORTED,
         strformat("upload_weight %s: ggml type %u is not supported by the CUDA plugin",
                   w.label().c_str(), desc.type));
  if (desc.rows < 1 || desc.cols < 1 || desc.cols % w.layout.block_values != 0 ||
      desc.rows > (int64_t{1} << 31) || desc.cols > (int64_t{1} << 31))
    fail_invalid(strformat("upload_weight %s: shape %lld x %lld is invalid for type %u (cols "
                           "must be a positive multiple of %d)",
                           w.label().c_str(), static_cast<long long>(desc.rows),
                           static_cast<long long>(desc.cols), desc.type, w.layout.block_values));
  const uint64_t row_bytes =
      static_cast<uint64_t>(desc.cols / w.layout.block_values) * w.layout.block_bytes;
  const uint64_t expected = row_bytes * static_cast<uint64_t>(desc.rows);
  if (desc.nbytes != expected)
    fail_invalid(strformat("upload_weight %s: nbytes is %llu, expected %llu for %lld rows",
                           w.label().c_str(), static_cast<unsigned long long>(desc.nbytes),
                           static_cast<unsigned long long>(expected),
                           static_cast<long long>(desc.rows)));
  if (desc.data == nullptr)
    fail_invalid("upload_weight " + w.label() + ": data is NULL");
  w.rows = desc.rows;
  w.cols = desc.cols;
  w.data = DeviceBuffer(device, expected, "weight " + w.label());
  // Staged chunk by chunk: the host may free its bytes when the call
  // returns (no OUTLIVES promise is relied on), and by then every byte has
  // been read into a staging buffer; the last copies may still be in flight.
  const auto *bytes = static_cast<const uint8_t *>(desc.data);
  if (is_planar_type(desc.type)) {
    const PlanarSource source{desc.type, bytes, desc.rows, desc.cols};
    stager.upload(w.data.get(), expected, [&](uint8_t *out, uint64_t offset, uint64_t n) {
      repack_planar_bytes(source, offset, n, out);
    });
  } else {
    stager.upload(w.data.get(), expected, [&](uint8_t *out, uint64_t offset, uint64_t n) {
      std::memcpy(out, bytes + offset, n);
    });
  }
  return w;
}

} // namespace bonsai::cuda
