// AVX2 kernels for f32/f16/bf16 weights against f32 activations, the f32
// dot/axpy, the softmax and the f16 store attention uses (its dot products are
// in avx2_attention.cpp). Accumulation order is fixed, so results are
// reproducible.
#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>
#include <cmath>
#include <iterator>

#include <immintrin.h>

#include "kernels/exp_polynomial.hpp"
#include "kernels/simd_kernels.hpp"
#include "kernels/template_dispatch.hpp"
#include "kernels/x86_helpers.hpp"

namespace bonsai::cpu {
namespace {

// Eight weights as f32, from any of the three float formats.
template <GgmlType T> BONSAI_TARGET_AVX2 inline __m256 load8(const uint8_t *row, int64_t c) {
  if constexpr (T == GgmlType::F32) {
    return _mm256_loadu_ps(reinterpret_cast<const float *>(row) + c);
  } else if constexpr (T == GgmlType::F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 2 * c)));
  } else {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 2 * c)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
}

template <GgmlType T> BONSAI_TARGET_AVX2 inline float load1(const uint8_t *row, int64_t c) {
  if constexpr (T == GgmlType::F32) {
    float v;
    std::memcpy(&v, row + 4 * c, sizeof(v));
    return v;
  } else if constexpr (T == GgmlType::F16) {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, sizeof(h));
    return _cvtsh_ss(h);
  } else {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, sizeof(h));
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  }
}

template <GgmlType T> BONSAI_TARGET_AVX2 void float_rows(const RowJob &job) {
  for (int64_t r = 0; r < job.n_rows; ++r) {
    const uint8_t *row = job.w + static_cast<size_t>(r) * job.w_row_bytes;
    for (int t = 0; t < job.n_tokens; ++t) {
      const float *x = job.x + static_cast<int64_t>(t) * job.ldx;
      __m256 acc0 = _mm256_setzero_ps();
      __m256 acc1 = _mm256_setzero_ps();
      int64_t c = 0;
      for (; c + 16 <= job.cols; c += 16) {
        acc0 = _mm256_fmadd_ps(load8<T>(row, c), _mm256_loadu_ps(x + c), acc0);
        acc1 = _mm256_fmadd_ps(load8<T>(row, c + 8), _mm256_loadu_ps(x + c + 8), acc1);
      }
      float tail = 0.0f;
      for (; c < job.cols; ++c)
        tail += load1<T>(row, c) * x[c];
      job.y[static_cast<int64_t>(t) * job.ldy + r] = hsum256(_mm256_add_ps(acc0, acc1)) + tail;
    }
  }
}

} // namespace

void avx2_rows_float(const RowJob &job) {
  with_float_type(job.type, [&]<GgmlType T>() { float_rows<T>(job); });
}

BONSAI_TARGET_AVX2 float avx2_dot(const float *a, const float *b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  float tail = 0.0f;
  for (; i < n; ++i)
    tail += a[i] * b[i];
  return hsum256(_mm256_add_ps(acc0, acc1)) + tail;
}

BONSAI_TARGET_AVX2 void avx2_axpy(float alpha, const float *x, float *y, int64_t n) {
  const __m256 a = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(a, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i)
    y[i] += alpha * x[i];
}

namespace {

// e^x for x <= 0 (exp_polynomial.hpp), 2^n built in the exponent bits. x is clamped at -87 (e^-87
// is near f32's smallest normal number), so a weight that would underflow is ~1e-38 instead of 0.
// NaN stays NaN.
BONSAI_TARGET_AVX2 inline __m256 exp_nonpositive(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-87.0f), x);
  namespace ep = exp_polynomial;
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(ep::kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ep::kLn2High), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(ep::kLn2Low), r);
  __m256 p = _mm256_set1_ps(ep::kTaylor[0]);
#pragma GCC unroll 8
  for (size_t k = 1; k < std::size(ep::kTaylor); ++k)
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ep::kTaylor[k]));
  const __m256i two_n =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
}

} // namespace

BONSAI_TARGET_AVX2 float avx2_softmax_weights(float *scores, int64_t n) {
  __m256 max_v = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    max_v = _mm256_max_ps(max_v, _mm256_loadu_ps(scores + j));
  float max_score = hmax256(max_v);
  for (int64_t k = j; k < n; ++k)
    max_score = std::max(max_score, scores[k]);
  const __m256 max_b = _mm256_set1_ps(max_score);
  __m256 sum = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 w = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(scores + j), max_b));
    _mm256_storeu_ps(scores + j, w);
    sum = _mm256_add_ps(sum, w);
  }
  if (j < n) { // the tail through a zero-padded vector, so it takes the same exp
    alignas(32) float tail[8] = {};
    std::copy(scores + j, scores + n, tail);
    const __m256 live = _mm256_cmp_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7),
                                      _mm256_set1_ps(static_cast<float>(n - j)), _CMP_LT_OQ);
    const __m256 w =
        _mm256_and_ps(live, exp_nonpositive(_mm256_sub_ps(_mm256_load_ps(tail), max_b)));
    _mm256_store_ps(tail, w);
    std::copy(tail, tail + (n - j), scores + j);
    sum = _mm256_add_ps(sum, w);
  }
  return hsum256(sum);
}

BONSAI_TARGET_AVX2 void avx2_to_f16(const float *x, uint16_t *out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i)
    out[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

} // namespace bonsai::cpu

#endif
