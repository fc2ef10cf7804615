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

// Regrouping a block moves each code within its 32-bit word: word k holds
// weights k * W .. k * W + W - 1 (W = 32 / bits) both in the GGUF block
// (LSB-first) and in the planar one, where weight k * W + r sits in byte
// r % 4 at bit bits * (r / 4) (kernels/common_prelude.cuh, PlanarType).
// Where a code of the word's input byte m lands depends only on its place
// in that byte, plus 2 m, so one 256-entry table per type turns each input
// byte into its output bits (4 lookups per word instead of a loop per code):
//   Q1_0: bit i of byte m is weight 8 m + i: output byte i % 4, bit 2 m + i / 4;
//   Q2_0: field i of byte m is weight 4 m + i: output byte i, bits 2 m and 2 m + 1.
struct SpreadTable {
  uint32_t entry[256] = {};
};

constexpr SpreadTable spread_table(int bits) {
  SpreadTable t;
  for (unsigned byte = 0; byte < 256; ++byte)
    for (int i = 0; i < 8 / bits; ++i) {
      const uint32_t code = (byte >> (bits * i)) & ((1u << bits) - 1);
      const int at = bits == 1 ? 8 * (i % 4) + i / 4 : 8 * i;
      t.entry[byte] |= code << at;
    }
  return t;
}
constexpr SpreadTable kSpreadQ1 = spread_table(1);
constexpr SpreadTable kSpreadQ2 = spread_table(2);

// The planar codes of one block (payload_bytes of them) from its GGUF codes.
void regroup_block(const uint8_t *codes, const PlanarGeometry &g, uint8_t *out) {
  const SpreadTable &table = g.bits == 1 ? kSpreadQ1 : kSpreadQ2;
  for (int k = 0; k < g.payload_bytes / 4; ++k) {
    const uint8_t *in = codes + 4 * k;
    const uint32_t word = table.entry[in[0]] | table.entry[in[1]] << 2 | table.entry[in[2]] << 4 |
                          table.entry[in[3]] << 6;
    for (int byte = 0; byte < 4; ++byte) // little-endian, as the GPU reads it
      out[4 * k + byte] = static_cast<uint8_t>(word >> (8 * byte));
  }
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
  const uint64_t scales_from = std::max(offset, codes_end);
  if (scales_from < end)
    oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<uint64_t>(scales_from, end, 1 << 16),
                              [&](const oneapi::tbb::blocked_range<uint64_t> &bytes) {
                                for (uint64_t k = bytes.begin(); k != bytes.end(); ++k) {
                                  const uint64_t s = k - codes_end;
                                  out[k - offset] = source.data[(s / 2) * block_bytes + s % 2];
                                }
                              });
}

} // namespace bonsai::cuda
