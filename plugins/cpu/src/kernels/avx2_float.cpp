// AVX2 kernels for f32/f16/bf16 weights against f32 activations, and the f32
// dot/axpy attention uses. Accumulation order is fixed, so results are
// reproducible.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

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

} // namespace bonsai::cpu

#endif
