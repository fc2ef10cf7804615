#include "weight_repack.hpp"

#include <algorithm>
#include <cstring>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

namespace bonsai::cuda {
namespace {

struct PlanarGeometry {
  int bits = 0;          // per code
  int payload_bytes = 0; // codes of one block
};

PlanarGeometry geometry(uint32_t ggml_type) {
  switch (ggml_type) {
  case 41: // Q1_0: f16 d + 128 sign bits
    return {1, 16};
  case 42: // Q2_0: f16 d + 128 2-bit codes
    return {2, 32};
  default:
    return {};
  }
}

constexpr int kBlockValues = 128;

// GGUF code of weight j: LSB-first within each byte.
unsigned gguf_code(const uint8_t *codes, int bits, int j) {
  const int per_byte = 8 / bits;
  return (codes[j / per_byte] >> (bits * (j % per_byte))) & ((1u << bits) - 1);
}

// Weight j of a block goes to 32-bit word j / W, plane (j % W) / 4, byte
// j % 4, W = 32 / bits: shifting a word right by plane * bits and masking
// every byte's low bits then gives four consecutive codes, one per byte.
void regroup_block(const uint8_t *codes, const PlanarGeometry &g, uint8_t *out) {
  const int per_word = 32 / g.bits;
  uint32_t words[8] = {};
  for (int j = 0; j < kBlockValues; ++j) {
    const int r = j % per_word;
    const int shift = 8 * (r % 4) + g.bits * (r / 4);
    words[j / per_word] |= gguf_code(codes, g.bits, j) << shift;
  }
  for (int k = 0; k < g.payload_bytes / 4; ++k)
    for (int byte = 0; byte < 4; ++byte) // little-endian, as the GPU reads it
      out[4 * k + byte] = static_cast<uint8_t>(words[k] >> (8 * byte));
}

} // namespace

bool is_planar_type(uint32_t ggml_type) {
  return geometry(ggml_type).bits != 0;
}

int planar_code_bytes(uint32_t ggml_type) {
  return geometry(ggml_type).payload_bytes;
}

void repack_planar(const PlanarSource &source, uint8_t *out) {
  const PlanarGeometry g = geometry(source.ggml_type);
  const int64_t n_blocks = source.rows * (source.cols / kBlockValues);
  repack_planar_bytes(source, 0, static_cast<uint64_t>(n_blocks) * (2 + g.payload_bytes), out);
}

void repack_planar_bytes(const PlanarSource &source, uint64_t offset, uint64_t n, uint8_t *out) {
  const PlanarGeometry g = geometry(source.ggml_type);
  const auto payload = static_cast<uint64_t>(g.payload_bytes);
  const uint64_t block_bytes = 2 + payload;
  const auto n_blocks = static_cast<uint64_t>(source.rows * (source.cols / kBlockValues));
  const uint64_t codes_end = n_blocks * payload, end = offset + n;
  // The codes plane: block i's regrouped codes at [i * payload, (i + 1) * payload).
  if (offset < codes_end) {
    const uint64_t first = offset / payload,
                   last = (std::min(end, codes_end) + payload - 1) / payload;
    oneapi::tbb::parallel_for(
        oneapi::tbb::blocked_range<uint64_t>(first, last, 4096),
        [&](const oneapi::tbb::blocked_range<uint64_t> &blocks) {
          for (uint64_t i = blocks.begin(); i != blocks.end(); ++i) {
            uint8_t codes[32];
            regroup_block(source.data + i * block_bytes + 2, g, codes);
            const uint64_t from = std::max(i * payload, offset);
            const uint64_t to = std::min((i + 1) * payload, std::min(end, codes_end));
            std::memcpy(out + (from - offset), codes + (from - i * payload), to - from);
          }
        });
  }
  // The scales plane: byte k is byte k % 2 of block k / 2's f16 scale.
  for (uint64_t k = std::max(offset, codes_end); k < end; ++k) {
    const uint64_t s = k - codes_end;
    out[k - offset] = source.data[(s / 2) * block_bytes + s % 2];
  }
}

} // namespace bonsai::cuda
