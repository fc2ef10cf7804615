// Reference quantization (scalar, f32 math). The rules are documented in
// formats.hpp; tools use it to make test weights, tests use it as an oracle.
#include <cmath>
#include <cstring>

#include "bonsai/core/formats.hpp"
#include "int_blocks.hpp"

namespace bonsai {
namespace {

float mean_abs(const float *w, int count) {
  float sum = 0.0f;
  for (int j = 0; j < count; ++j)
    sum += std::fabs(w[j]);
  return sum / static_cast<float>(count);
}

// Ternary code of w / d: round half away from zero, clamped to [-1, 1], then
// offset by one. Written with comparisons so NaN falls through to "zero".
uint8_t ternary_code(float ratio) {
  if (ratio >= 0.5f)
    return 2;
  if (ratio <= -0.5f)
    return 0;
  return 1;
}

// round(v) clamped to [-127, 127]; NaN -> 0. Clamping first keeps the
// float -> int conversion in range.
int8_t q8_code(float v) {
  if (!(v == v))
    return 0;
  const float r = std::round(v);
  if (r >= 127.0f)
    return 127;
  if (r <= -127.0f)
    return -127;
  return static_cast<int8_t>(r);
}

void quantize_q1_0(const float *src, BlockQ1_0 *blocks, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float *w = src + b * kQ1BlockSize;
    BlockQ1_0 &out = blocks[b];
    out.d = f32_to_fp16(mean_abs(w, kQ1BlockSize));
    std::memset(out.signs, 0, sizeof out.signs);
    for (int j = 0; j < kQ1BlockSize; ++j)
      if (w[j] >= 0.0f)
        out.signs[j / 8] = static_cast<uint8_t>(out.signs[j / 8] | (1u << (j % 8)));
  }
}

void quantize_q2_0(const float *src, BlockQ2_0 *blocks, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float *w = src + b * kQ2BlockSize;
    BlockQ2_0 &out = blocks[b];
    const float d = mean_abs(w, kQ2BlockSize);
    out.d = f32_to_fp16(d);
    const float inv_d = d > 0.0f ? 1.0f / d : 0.0f;
    std::memset(out.codes, 0, sizeof out.codes);
    for (int j = 0; j < kQ2BlockSize; ++j) {
      const uint8_t code = ternary_code(w[j] * inv_d);
      out.codes[j / 4] = static_cast<uint8_t>(out.codes[j / 4] | (code << (2 * (j % 4))));
    }
  }
}

void quantize_q8_0(const float *src, BlockQ8_0 *blocks, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float *w = src + b * kQ8BlockSize;
    BlockQ8_0 &out = blocks[b];
    float amax = 0.0f;
    for (int j = 0; j < kQ8BlockSize; ++j)
      if (std::fabs(w[j]) > amax)
        amax = std::fabs(w[j]);
    const float d = amax / 127.0f;
    const float inv_d = d > 0.0f ? 1.0f / d : 0.0f;
    out.d = f32_to_fp16(d);
    for (int j = 0; j < kQ8BlockSize; ++j)
      out.qs[j] = q8_code(w[j] * inv_d);
  }
}

// The other ternary types: Q2_0's absmean rule per block of the type.
void quantize_ternary(GgmlType type, const float *src, uint8_t *dst, int64_t n_blocks) {
  const TypeTraits t = traits_of(type);
  const int n = static_cast<int>(t.block_elements);
  int8_t k[kTqBlockSize];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float *w = src + b * n;
    const float d = mean_abs(w, n);
    const float inv_d = d > 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < n; ++j)
      k[j] = static_cast<int8_t>(ternary_code(w[j] * inv_d) - 1);
    int bad = 0;
    detail::encode_block(type, k, f32_to_fp16(d), dst + static_cast<size_t>(b) * t.block_bytes,
                         &bad); // k is in -1..1: every ternary type stores it
  }
}

// Q4_0 as ggml's reference: the value of largest magnitude maps to -8.
void quantize_q4_0(const float *src, uint8_t *dst, int64_t n_blocks) {
  int8_t k[kQ4BlockSize];
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float *w = src + b * kQ4BlockSize;
    float extreme = 0.0f;
    for (int j = 0; j < kQ4BlockSize; ++j)
      if (std::fabs(w[j]) > std::fabs(extreme))
        extreme = w[j];
    const float d = extreme / -8.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQ4BlockSize; ++j) {
      const float v = w[j] * inv_d + 8.5f;
      // Comparisons first so NaN and out-of-range values stay defined.
      const int q = v >= 15.0f ? 15 : (v >= 0.0f ? static_cast<int>(v) : 0);
      k[j] = static_cast<int8_t>(q - 8);
    }
    int bad = 0;
    detail::encode_block(GgmlType::Q4_0, k, f32_to_fp16(d),
                         dst + static_cast<size_t>(b) * sizeof(BlockQ4_0), &bad);
  }
}

template <uint16_t (*Convert)(float)>
void quantize_16bit(const float *src, uint8_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = Convert(src[i]);
    std::memcpy(dst + 2 * i, &h, sizeof h);
  }
}

} // namespace

void quantize_row(GgmlType type, const float *src, void *dst, int64_t n) {
  const size_t bytes = row_bytes(type, n); // validates type and n
  if (bytes == 0)
    return; // empty row: src/dst may be null
  const int64_t n_blocks = n / traits_of(type).block_elements;
  switch (type) {
  case GgmlType::F32:
    std::memcpy(dst, src, bytes);
    return;
  case GgmlType::F16:
    quantize_16bit<f32_to_fp16>(src, static_cast<uint8_t *>(dst), n);
    return;
  case GgmlType::BF16:
    quantize_16bit<f32_to_bf16>(src, static_cast<uint8_t *>(dst), n);
    return;
  case GgmlType::Q8_0:
    quantize_q8_0(src, static_cast<BlockQ8_0 *>(dst), n_blocks);
    return;
  case GgmlType::Q1_0:
    quantize_q1_0(src, static_cast<BlockQ1_0 *>(dst), n_blocks);
    return;
  case GgmlType::Q2_0:
    quantize_q2_0(src, static_cast<BlockQ2_0 *>(dst), n_blocks);
    return;
  case GgmlType::PQ2_0:
  case GgmlType::PTQ1_0:
  case GgmlType::TQ1_0:
  case GgmlType::TQ2_0:
  case GgmlType::Q2_0_G64:
    quantize_ternary(type, src, static_cast<uint8_t *>(dst), n_blocks);
    return;
  case GgmlType::Q4_0:
    quantize_q4_0(src, static_cast<uint8_t *>(dst), n_blocks);
    return;
  }
}

} // namespace bonsai
