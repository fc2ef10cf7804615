#pragma once
// The planar device layout of Q1_0 and Q2_0 weights (kernels/common_prelude.cuh,
// PlanarType): the GGUF blocks (f16 scale, then codes) are split into a plane
// of codes, 16-byte aligned per block, followed by a plane of scales, and the
// codes inside a block are regrouped for dp4a. Same byte count as the GGUF
// data, so device memory use does not change.
#include <cstdint>

namespace bonsai::cuda {

// Whether the kernels read weights of `ggml_type` in the planar layout.
bool is_planar_type(uint32_t ggml_type);

// Bytes of codes per 128-weight block in the planar layout (16 for Q1_0, 32
// for Q2_0), or 0 for a type that is not planar.
int planar_code_bytes(uint32_t ggml_type);

// What to repack: `rows` GGUF rows of `cols` weights each (cols a multiple
// of 128) of a planar type.
struct PlanarSource {
  uint32_t ggml_type = 0;
  const uint8_t *data = nullptr; // rows * cols / 128 blocks, GGUF layout
  int64_t rows = 0;
  int64_t cols = 0;
};

// Writes the planar form of `source` to `out`, which holds as many bytes as
// the source data.
void repack_planar(const PlanarSource &source, uint8_t *out);

// Writes bytes [offset, offset + n) of the planar form to `out` (n bytes),
// for uploads staged in chunks. Blocks are repacked in parallel (oneTBB).
void repack_planar_bytes(const PlanarSource &source, uint64_t offset, uint64_t n, uint8_t *out);

} // namespace bonsai::cuda
