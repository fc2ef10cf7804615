// Reference dequantization: exact f32 values of each stored weight.
#include <cstring>

#include "bonsai/core/formats.hpp"
#include "int_blocks.hpp"

namespace bonsai {
namespace {

void dequantize_q1_0(const BlockQ1_0 *blocks, float *dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = fp16_to_f32(blocks[b].d);
    float *out = dst + b * kQ1BlockSize;
    for (int j = 0; j < kQ1BlockSize; ++j)
      out[j] = ((blocks[b].signs[j / 8] >> (j % 8)) & 1u) ? d : -d;
  }
}

void dequantize_q2_0(const BlockQ2_0 *blocks, float *dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = fp16_to_f32(blocks[b].d);
    float *out = dst + b * kQ2BlockSize;
    for (int j = 0; j < kQ2BlockSize; ++j) {
      const int code = (blocks[b].codes[j / 4] >> (2 * (j % 4))) & 3;
      out[j] = static_cast<float>(code - 1) * d;
    }
  }
}

void dequantize_q8_0(const BlockQ8_0 *blocks, float *dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = fp16_to_f32(blocks[b].d);
    float *out = dst + b * kQ8BlockSize;
    for (int j = 0; j < kQ8BlockSize; ++j)
      out[j] = static_cast<float>(blocks[b].qs[j]) * d;
  }
}

// Any other quantized type through its integer view: k * d.
void dequantize_int_blocks(GgmlType type, const uint8_t *src, float *dst, int64_t n_blocks) {
  const TypeTraits t = traits_of(type);
  int8_t k[kTqBlockSize];
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint16_t d_bits = 0;
    detail::decode_block(type, src + static_cast<size_t>(b) * t.block_bytes, k, &d_bits);
    const float d = fp16_to_f32(d_bits);
    for (int64_t e = 0; e < t.block_elements; ++e)
      dst[b * t.block_elements + e] = static_cast<float>(k[e]) * d;
  }
}

// src may be unaligned (GGUF data is only 32-byte aligned per tensor, rows of
// half types need not be 2-byte aligned in crafted files), so read via memcpy.
template <float (*Convert)(uint16_t)>
void dequantize_16bit(const uint8_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, sizeof h);
    dst[i] = Convert(h);
  }
}

} // namespace

void dequantize_row(GgmlType type, const void *src, float *dst, int64_t n) {
  const size_t bytes = row_bytes(type, n); // validates type and n
  if (bytes == 0)
    return; // empty row: src/dst may be null
  const int64_t n_blocks = n / traits_of(type).block_elements;
  switch (type) {
  case GgmlType::F32:
    std::memcpy(dst, src, bytes);
    return;
  case GgmlType::F16:
    dequantize_16bit<fp16_to_f32>(static_cast<const uint8_t *>(src), dst, n);
    return;
  case GgmlType::BF16:
    dequantize_16bit<bf16_to_f32>(static_cast<const uint8_t *>(src), dst, n);
    return;
  case GgmlType::Q8_0:
    dequantize_q8_0(static_cast<const BlockQ8_0 *>(src), dst, n_blocks);
    return;
  case GgmlType::Q1_0:
    dequantize_q1_0(static_cast<const BlockQ1_0 *>(src), dst, n_blocks);
    return;
  case GgmlType::Q2_0:
  case GgmlType::PQ2_0:
    dequantize_q2_0(static_cast<const BlockQ2_0 *>(src), dst, n_blocks);
    return;
  case GgmlType::Q4_0:
  case GgmlType::TQ1_0:
  case GgmlType::TQ2_0:
  case GgmlType::PTQ1_0:
  case GgmlType::Q2_0_G64:
    dequantize_int_blocks(type, static_cast<const uint8_t *>(src), dst, n_blocks);
    return;
  }
}

} // namespace bonsai
