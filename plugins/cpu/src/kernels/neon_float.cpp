// Advanced SIMD kernels for f32/f16/bf16 weights against f32 activations,
// the f32 dot/axpy, the softmax and the f16 store attention uses (its dot
// products are in neon_attention.cpp). Accumulation order is fixed, so
// results are reproducible; every AArch64 set uses these.
#if defined(__aarch64__)

#include <algorithm>
#include <cmath>
#include <iterator>

#include "kernels/arm_helpers.hpp"
#include "kernels/arm_kernels.hpp"
#include "kernels/exp_polynomial.hpp"
#include "kernels/template_dispatch.hpp"

namespace bonsai::cpu {
namespace {

// Four weights as f32, from any of the three float formats.
template <GgmlType T> inline float32x4_t load4(const uint8_t *row, int64_t c) {
  if constexpr (T == GgmlType::F32)
    return vld1q_f32(reinterpret_cast<const float *>(row) + c);
  else if constexpr (T == GgmlType::F16)
    return load4_f16(row + 2 * c);
  else
    return vreinterpretq_f32_u32(
        vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t *>(row + 2 * c)), 16));
}

// The dot product of n weights (type T) and n floats: four accumulators of
// four lanes over 16 values at a time, a last partial vector zero-padded.
template <GgmlType T> float dot_row(const uint8_t *row, const float *x, int64_t n) {
  float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  int64_t c = 0;
  for (; c + 16 <= n; c += 16)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
      acc[k] = vfmaq_f32(acc[k], load4<T>(row, c + 4 * k), vld1q_f32(x + c + 4 * k));
  for (int k = 0; c < n; c += 4, ++k) { // 0..3 vectors, the last maybe partial
    alignas(16) float w[4] = {}, v[4] = {};
    const int64_t m = std::min<int64_t>(4, n - c);
    for (int64_t i = 0; i < m; ++i) {
      if constexpr (T == GgmlType::F32) {
        std::memcpy(&w[i], row + 4 * (c + i), sizeof(float));
      } else {
        uint16_t h;
        std::memcpy(&h, row + 2 * (c + i), sizeof(h));
        w[i] = T == GgmlType::F16
                   ? vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0)
                   : bf16_to_f32(h);
      }
      v[i] = x[c + i];
    }
    acc[k] = vfmaq_f32(acc[k], vld1q_f32(w), vld1q_f32(v));
  }
  return sum_lanes(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
}

template <GgmlType T> void float_rows(const RowJob &job) {
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    for (int t = 0; t < job.n_tokens; ++t)
      job.y[static_cast<int64_t>(t) * job.ldy + r] =
          dot_row<T>(row, job.x + static_cast<int64_t>(t) * job.ldx, job.cols);
  }
}

// e^x for x <= 0 (exp_polynomial.hpp), 2^n built in the exponent bits; x is
// clamped at -87 (e^-87 is near f32's smallest normal number), so a weight
// that would underflow is ~1e-38 instead of 0. NaN stays NaN.
inline float32x4_t exp_nonpositive(float32x4_t x) {
  namespace ep = exp_polynomial;
  x = vmaxq_f32(vdupq_n_f32(-87.0f), x);
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(ep::kLog2e)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(ep::kLn2High));
  r = vfmsq_f32(r, n, vdupq_n_f32(ep::kLn2Low));
  float32x4_t p = vdupq_n_f32(ep::kTaylor[0]);
#pragma GCC unroll 8
  for (size_t k = 1; k < std::size(ep::kTaylor); ++k)
    p = vfmaq_f32(vdupq_n_f32(ep::kTaylor[k]), p, r);
  const int32x4_t two_n = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(two_n));
}

} // namespace

void neon_rows_float(const RowJob &job) {
  with_float_type(job.type, [&]<GgmlType T>() { float_rows<T>(job); });
}

float neon_dot(const float *a, const float *b, int64_t n) {
  return dot_row<GgmlType::F32>(reinterpret_cast<const uint8_t *>(a), b, n);
}

void neon_axpy(float alpha, const float *x, float *y, int64_t n) {
  const float32x4_t a = vdupq_n_f32(alpha);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), a, vld1q_f32(x + i)));
  for (; i < n; ++i) // the same fused multiply-add as the vector lanes
    y[i] = std::fma(alpha, x[i], y[i]);
}

float neon_softmax_weights(float *scores, int64_t n) {
  float32x4_t max_v = vdupq_n_f32(-INFINITY);
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    max_v = vmaxq_f32(max_v, vld1q_f32(scores + j));
  float max_score = vmaxvq_f32(max_v);
  for (int64_t k = j; k < n; ++k)
    max_score = std::max(max_score, scores[k]);
  const float32x4_t max_b = vdupq_n_f32(max_score);
  float32x4_t sum = vdupq_n_f32(0.0f);
  for (j = 0; j + 4 <= n; j += 4) {
    const float32x4_t w = exp_nonpositive(vsubq_f32(vld1q_f32(scores + j), max_b));
    vst1q_f32(scores + j, w);
    sum = vaddq_f32(sum, w);
  }
  if (j < n) { // the tail through a padded vector, so it takes the same exp
    alignas(16) float tail[4] = {};
    std::copy(scores + j, scores + n, tail);
    const uint32x4_t live =
        vcltq_f32(float32x4_t{0.0f, 1.0f, 2.0f, 3.0f}, vdupq_n_f32(static_cast<float>(n - j)));
    const float32x4_t w = vreinterpretq_f32_u32(
        vandq_u32(live, vreinterpretq_u32_f32(exp_nonpositive(vsubq_f32(vld1q_f32(tail), max_b)))));
    vst1q_f32(tail, w);
    std::copy(tail, tail + (n - j), scores + j);
    sum = vaddq_f32(sum, w);
  }
  return sum_lanes(sum);
}

void neon_to_f16(const float *x, uint16_t *out, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1_u16(out + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  if (i < n) { // the tail through a padded vector: the same conversion
    alignas(16) float tail[4] = {};
    alignas(8) uint16_t half[4];
    std::copy(x + i, x + n, tail);
    vst1_u16(half, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(tail))));
    std::copy(half, half + (n - i), out + i);
  }
}

} // namespace bonsai::cpu

#endif
