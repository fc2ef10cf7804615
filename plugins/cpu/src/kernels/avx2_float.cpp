// AVX2 kernels for f32/f16/bf16 weights against f32 activations, and the f32
// dot/axpy attention uses. Accumulation order is fixed, so results are
// reproducible.
#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>
#include <cmath>
#include <iterator>

#include <immintrin.h>

#include "kernels/exp_polynomial.hpp"
#include "kernels/simd_kernels.hpp"
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
  switch (job.type) {
  case GgmlType::F16:
    float_rows<GgmlType::F16>(job);
    break;
  case GgmlType::BF16:
    float_rows<GgmlType::BF16>(job);
    break;
  default:
    float_rows<GgmlType::F32>(job);
    break;
  }
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

// Sums of the 8 lanes of v[0..3] in exactly hsum256's order (halves first,
// then lanes 0+2 and 1+3, then those two): out[r] for r < 4.
BONSAI_TARGET_AVX2 inline void hsum4(const __m256 v[4], float out[4]) {
  const __m256 s01 = _mm256_add_ps(_mm256_permute2f128_ps(v[0], v[1], 0x20),
                                   _mm256_permute2f128_ps(v[0], v[1], 0x31));
  const __m256 s23 = _mm256_add_ps(_mm256_permute2f128_ps(v[2], v[3], 0x20),
                                   _mm256_permute2f128_ps(v[2], v[3], 0x31));
  // Per half: [a0 a1 c0 c1] + [a2 a3 c2 c3], then (x0 + x1) by hadd.
  const __m256 pairs = _mm256_add_ps(_mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_hadd_ps(pairs, pairs));
  out[0] = lanes[0]; // half 0: v[0], v[2]; half 1: v[1], v[3]
  out[1] = lanes[4];
  out[2] = lanes[1];
  out[3] = lanes[5];
}

} // namespace

namespace {

// Eight values of position `pos` from dimension c on, as f32.
template <KvType T>
BONSAI_TARGET_AVX2 inline __m256 load8(const HeadSpan &span, int64_t pos, int c) {
  if constexpr (T == KvType::F16)
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(span.f16() + pos * span.stride + c)));
  else
    return _mm256_loadu_ps(span.f32() + pos * span.stride + c);
}

// Four keys at a time share each query load; needs dim % 16 == 0. A last
// partial group repeats its last key, so a key's score is computed the same
// way wherever it falls (prefill and decode agree bit for bit).
template <KvType T>
BONSAI_TARGET_AVX2 void key_scores(const float *q, const HeadSpan &keys, float scale, float *out) {
  for (int64_t j = 0; j < keys.n; j += 4) {
    const int valid = static_cast<int>(std::min<int64_t>(4, keys.n - j));
    int64_t pos[4];
    for (int r = 0; r < 4; ++r)
      pos[r] = j + std::min(r, valid - 1);
    __m256 even[4];
    __m256 odd[4];
    for (int r = 0; r < 4; ++r) {
      even[r] = _mm256_setzero_ps();
      odd[r] = _mm256_setzero_ps();
    }
    for (int c = 0; c < keys.dim; c += 16) {
      const __m256 q0 = _mm256_loadu_ps(q + c);
      const __m256 q1 = _mm256_loadu_ps(q + c + 8);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        even[r] = _mm256_fmadd_ps(q0, load8<T>(keys, pos[r], c), even[r]);
        odd[r] = _mm256_fmadd_ps(q1, load8<T>(keys, pos[r], c + 8), odd[r]);
      }
    }
    __m256 sums[4];
    for (int r = 0; r < 4; ++r)
      sums[r] = _mm256_add_ps(even[r], odd[r]);
    float dots[4];
    hsum4(sums, dots);
    for (int r = 0; r < valid; ++r)
      out[j + r] = dots[r] * scale;
  }
}

// 64 output values at a time stay in registers while every value vector is
// added in; each output is summed over keys in index order with one fused
// multiply-add each. Needs dim % 16 == 0.
template <KvType T>
BONSAI_TARGET_AVX2 void weighted_values(const float *p, const HeadSpan &values, float *out) {
  int c = 0;
  for (; c + 64 <= values.dim; c += 64) {
    __m256 acc[8];
    for (int r = 0; r < 8; ++r)
      acc[r] = _mm256_setzero_ps();
    for (int64_t j = 0; j < values.n; ++j) {
      const __m256 pj = _mm256_set1_ps(p[j]);
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r)
        acc[r] = _mm256_fmadd_ps(pj, load8<T>(values, j, c + 8 * r), acc[r]);
    }
    for (int r = 0; r < 8; ++r)
      _mm256_storeu_ps(out + c + 8 * r, acc[r]);
  }
  for (; c < values.dim; c += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t j = 0; j < values.n; ++j)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), load8<T>(values, j, c), acc);
    _mm256_storeu_ps(out + c, acc);
  }
}

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

void avx2_key_scores(const float *q, const HeadSpan &keys, float scale, float *out) {
  if (keys.type == KvType::F16)
    key_scores<KvType::F16>(q, keys, scale, out);
  else
    key_scores<KvType::F32>(q, keys, scale, out);
}

void avx2_weighted_values(const float *p, const HeadSpan &values, float *out) {
  if (values.type == KvType::F16)
    weighted_values<KvType::F16>(p, values, out);
  else
    weighted_values<KvType::F32>(p, values, out);
}

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
