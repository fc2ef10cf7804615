// AVX-512 attention for several query tokens of one head at a time (prefill):
// each key and value row is loaded once for up to kMaxQueries queries instead
// of once per query, and four keys' scores are reduced together.
#if defined(__x86_64__) || defined(__i386__)

#include "kernels/avx512_intrinsics.hpp"

#include <algorithm>

namespace bonsai::cpu {
namespace {

// Lane i of the result is the sum of the 16 lanes of v[i] (a transposing
// reduction: 45 operations for 16 sums instead of 16 separate reductions).
BONSAI_TARGET_AVX512 inline __m512 sum_lanes16(const __m512 v[16]) {
  // a[k]: per 128-bit lane, partial sums of v[2k] and v[2k+1], interleaved.
  __m512 a[8];
  for (int k = 0; k < 8; ++k)
    a[k] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * k], v[2 * k + 1]),
                         _mm512_unpackhi_ps(v[2 * k], v[2 * k + 1]));
  // b[m]: per 128-bit lane, the lane's sums of v[4m..4m+3] in order.
  __m512 b[4];
  for (int m = 0; m < 4; ++m)
    b[m] = _mm512_add_ps(_mm512_shuffle_ps(a[2 * m], a[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(a[2 * m], a[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Add the four 128-bit lanes of each b[m] and place the result in lane m.
  const __m512 d01 = _mm512_add_ps(_mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 d23 = _mm512_add_ps(_mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d01, d23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(d01, d23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Scores of NQ queries against 4 keys at a time; dim % 16 == 0. A last
// partial group repeats its last key in the unused slots, so every score is
// computed the same way wherever its key falls: a token gets bit-identical
// scores in a prefill and in a decode step.
template <int NQ>
BONSAI_TARGET_AVX512 void scores_for(const MultiQuery &queries, const HeadSpan &keys, float scale,
                                     float *out, int64_t out_stride) {
  const __m512 scale_v = _mm512_set1_ps(scale);
  for (int64_t j = 0; j < keys.n; j += 4) {
    const int valid = static_cast<int>(std::min<int64_t>(4, keys.n - j));
    const float *k[4];
    for (int r = 0; r < 4; ++r)
      k[r] = keys.base + (j + std::min(r, valid - 1)) * keys.stride;
    __m512 acc[16]; // [query][key]; queries past NQ stay zero
    for (int i = 0; i < 16; ++i)
      acc[i] = _mm512_setzero_ps();
    for (int c = 0; c < keys.dim; c += 16) {
      __m512 kv[4];
      for (int r = 0; r < 4; ++r)
        kv[r] = _mm512_loadu_ps(k[r] + c);
#pragma GCC unroll 4
      for (int i = 0; i < NQ; ++i) {
        const __m512 qv = _mm512_loadu_ps(queries.q + i * queries.q_stride + c);
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
          acc[4 * i + r] = _mm512_fmadd_ps(qv, kv[r], acc[4 * i + r]);
      }
    }
    alignas(64) float sums[16];
    _mm512_store_ps(sums, _mm512_mul_ps(sum_lanes16(acc), scale_v));
    for (int i = 0; i < NQ; ++i)
      for (int r = 0; r < valid; ++r)
        out[i * out_stride + j + r] = sums[4 * i + r];
  }
}

// out_i = sum_j p_i[j] value_j for NQ rows of weights; 64 dims at a time so
// the NQ x 4 accumulators stay in registers; dim % 64 == 0.
template <int NQ>
BONSAI_TARGET_AVX512 void values_for(const float *p, int64_t p_stride, const HeadSpan &values,
                                     float *out, int64_t out_stride) {
  for (int c = 0; c < values.dim; c += 64) {
    __m512 acc[NQ][4];
    for (int i = 0; i < NQ; ++i)
      for (int r = 0; r < 4; ++r)
        acc[i][r] = _mm512_setzero_ps();
    for (int64_t j = 0; j < values.n; ++j) {
      const float *v = values.base + j * values.stride + c;
      __m512 vv[4];
      for (int r = 0; r < 4; ++r)
        vv[r] = _mm512_loadu_ps(v + 16 * r);
#pragma GCC unroll 4
      for (int i = 0; i < NQ; ++i) {
        const __m512 pij = _mm512_set1_ps(p[i * p_stride + j]);
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
          acc[i][r] = _mm512_fmadd_ps(pij, vv[r], acc[i][r]);
      }
    }
    for (int i = 0; i < NQ; ++i)
      for (int r = 0; r < 4; ++r)
        _mm512_storeu_ps(out + i * out_stride + c + 16 * r, acc[i][r]);
  }
}

} // namespace

void avx512_key_scores_multi(const MultiQuery &queries, const HeadSpan &keys, float scale,
                             float *out, int64_t out_stride) {
  switch (queries.n) {
  case 1:
    return scores_for<1>(queries, keys, scale, out, out_stride);
  case 2:
    return scores_for<2>(queries, keys, scale, out, out_stride);
  case 3:
    return scores_for<3>(queries, keys, scale, out, out_stride);
  default:
    return scores_for<4>(queries, keys, scale, out, out_stride);
  }
}

void avx512_weighted_values_multi(const float *p, int64_t p_stride, int n_rows,
                                  const HeadSpan &values, float *out, int64_t out_stride) {
  switch (n_rows) {
  case 1:
    return values_for<1>(p, p_stride, values, out, out_stride);
  case 2:
    return values_for<2>(p, p_stride, values, out, out_stride);
  case 3:
    return values_for<3>(p, p_stride, values, out, out_stride);
  default:
    return values_for<4>(p, p_stride, values, out, out_stride);
  }
}

} // namespace bonsai::cpu

#endif
