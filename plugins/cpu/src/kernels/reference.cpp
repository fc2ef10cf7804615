// Reference kernels: decode a row to f32 (exact: every stored weight value is
// representable in f32) and accumulate products in double, so each output is
// the exact dot product up to double rounding, rounded once to f32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernel_set.hpp"

namespace bonsai::cpu {
namespace {

// Plain scalar decoders for the two hot types; the others use core's
// reference dequantize_row.
void decode_q1_row(const uint8_t *src, float *dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ1BlockSize; ++b) {
    BlockQ1_0 block;
    std::memcpy(&block, src + b * sizeof(block), sizeof(block));
    const float d = fp16_to_f32(block.d);
    float *out = dst + b * kQ1BlockSize;
    for (int i = 0; i < kQ1BlockSize / 8; ++i)
      for (int k = 0; k < 8; ++k)
        out[8 * i + k] = static_cast<float>(2 * ((block.signs[i] >> k) & 1) - 1) * d;
  }
}

void decode_q2_row(const uint8_t *src, float *dst, int64_t n) {
  for (int64_t b = 0; b < n / kQ2BlockSize; ++b) {
    BlockQ2_0 block;
    std::memcpy(&block, src + b * sizeof(block), sizeof(block));
    const float d = fp16_to_f32(block.d);
    float *out = dst + b * kQ2BlockSize;
    for (int i = 0; i < kQ2BlockSize / 4; ++i)
      for (int k = 0; k < 4; ++k)
        out[4 * i + k] = static_cast<float>(((block.codes[i] >> (2 * k)) & 3) - 1) * d;
  }
}

void decode_row(GgmlType type, const uint8_t *src, float *dst, int64_t n) {
  if (type == GgmlType::Q1_0)
    decode_q1_row(src, dst, n);
  else if (type == GgmlType::Q2_0)
    decode_q2_row(src, dst, n);
  else
    dequantize_row(type, src, dst, n);
}

// Four independent double sums (a fixed order, so results are reproducible)
// keep the add latency from serializing the loop.
double dot_double(const float *a, const float *b, int64_t n) {
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k)
      acc[k] += static_cast<double>(a[i + k]) * static_cast<double>(b[i + k]);
  for (; i < n; ++i)
    acc[0] += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

void reference_rows(const RowJob &job) {
  std::vector<float> row(static_cast<size_t>(job.cols));
  for (int64_t r = 0; r < job.n_rows; ++r) {
    decode_row(job.type, job.w + static_cast<size_t>(r) * job.w_row_bytes, row.data(), job.cols);
    for (int t = 0; t < job.n_tokens; ++t)
      job.y[static_cast<int64_t>(t) * job.ldy + r] = static_cast<float>(
          dot_double(row.data(), job.x + static_cast<int64_t>(t) * job.ldx, job.cols));
  }
}

float reference_dot(const float *a, const float *b, int64_t n) {
  return static_cast<float>(dot_double(a, b, n));
}

void reference_axpy(float alpha, const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = static_cast<float>(static_cast<double>(y[i]) +
                              static_cast<double>(alpha) * static_cast<double>(x[i]));
}

KernelSet make_reference_set() {
  KernelSet set;
  set.name = "reference";
  set.exact = true;
  for (int k = 0; k < kWeightKinds; ++k) {
    set.rows[k] = reference_rows;
    set.quantized_input[k] = false;
    set.layout[k] = QuantLayout::Natural;
  }
  set.dot = reference_dot;
  set.axpy = reference_axpy;
  return set;
}

} // namespace

WeightKind weight_kind(GgmlType type) {
  switch (type) {
  case GgmlType::F32:
    return WeightKind::F32;
  case GgmlType::F16:
    return WeightKind::F16;
  case GgmlType::BF16:
    return WeightKind::BF16;
  case GgmlType::Q8_0:
    return WeightKind::Q8_0;
  case GgmlType::Q1_0:
    return WeightKind::Q1_0;
  case GgmlType::Q2_0:
    return WeightKind::Q2_0;
  case GgmlType::Q2_0_G64:
    return WeightKind::Q2_0_G64;
  default:
    break; // not accepted by upload_weight
  }
  return WeightKind::F32; // unreachable: weights are validated on upload
}

float softmax_weights_scalar(float *scores, int64_t n) {
  float max_score = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    max_score = std::max(max_score, scores[j]);
  float denom = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    denom += scores[j];
  }
  return denom;
}

void to_f16_scalar(const float *x, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f32_to_fp16(x[i]);
}

const KernelSet &reference_kernel_set() {
  static const KernelSet set = make_reference_set();
  return set;
}

} // namespace bonsai::cpu
