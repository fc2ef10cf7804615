#include "weight_repack.hpp"

#include <cstring>

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

void repack_planar(const PlanarSource &source, uint8_t *out) {
  const PlanarGeometry g = geometry(source.ggml_type);
  const int64_t n_blocks = source.rows * (source.cols / kBlockValues);
  const int block_bytes = 2 + g.payload_bytes;
  uint8_t *const scales = out + n_blocks * g.payload_bytes;
  for (int64_t i = 0; i < n_blocks; ++i) {
    const uint8_t *block = source.data + i * block_bytes;
    std::memcpy(scales + 2 * i, block, 2);
    regroup_block(block + 2, g, out + i * g.payload_bytes);
  }
}

} // namespace bonsai::cuda
