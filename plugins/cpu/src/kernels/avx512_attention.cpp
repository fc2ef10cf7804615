// AVX-512 attention for a group of queries that read the same KV head (the
// query heads of one KV head, and consecutive tokens in a prefill): each key
// and value row, f32 or f16, is loaded once for up to kMaxQueries queries,
// and four keys' scores are reduced together. Also the vectorised softmax.
#if defined(__x86_64__) || defined(__i386__)

#include "kernels/avx512_intrinsics.hpp"
#include "kernels/exp_polynomial.hpp"
#include "kernels/template_dispatch.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

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

// Sixteen values of position `pos` from dimension c on, as f32.
template <KvType T>
BONSAI_TARGET_AVX512 inline __m512 load16(const HeadSpan &span, int64_t pos, int c) {
  if constexpr (T == KvType::F16)
    return _mm512_cvtph_ps(load256(span.f16() + pos * span.stride + c));
  else
    return _mm512_loadu_ps(span.f32() + pos * span.stride + c);
}

// Scores of NQ queries against 4 keys at a time; dim % 16 == 0. A last
// partial group repeats its last key in the unused slots, so every score is
// computed the same way wherever its key falls: a token gets bit-identical
// scores in a prefill and in a decode step.
template <int NQ, KvType T>
BONSAI_TARGET_AVX512 void scores_for(const QueryGroup &queries, const HeadSpan &keys, float scale,
                                     float *out, int64_t out_stride) {
  const __m512 scale_v = _mm512_set1_ps(scale);
  for (int64_t j = 0; j < keys.n; j += 4) {
    const int valid = static_cast<int>(std::min<int64_t>(4, keys.n - j));
    int64_t pos[4];
    for (int r = 0; r < 4; ++r)
      pos[r] = j + std::min(r, valid - 1);
    __m512 acc[16]; // [query][key]; queries past NQ stay zero
    for (int i = 0; i < 16; ++i)
      acc[i] = _mm512_setzero_ps();
    for (int c = 0; c < keys.dim; c += 16) {
      __m512 kv[4];
      for (int r = 0; r < 4; ++r)
        kv[r] = load16<T>(keys, pos[r], c);
#pragma GCC unroll 4
      for (int i = 0; i < NQ; ++i) {
        const __m512 qv = _mm512_loadu_ps(queries.q[i] + c);
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

// out_i = sum_j p_i[j] value_j for NQ rows of weights; dim % 64 == 0. The
// NQ x 4 accumulators of 64 dims stay in registers over a block of kKeyBlock
// keys, whose value rows stay in L1 for the block's next 64 dims, so each
// value row comes from memory once. Every output is still summed over the
// keys in index order, one fused multiply-add each (the partial sums of a
// block pass through `out` exactly).
constexpr int64_t kKeyBlock = 64;
template <int NQ, KvType T>
BONSAI_TARGET_AVX512 void values_for(const float *p, int64_t p_stride, const QueryGroup &queries,
                                     const HeadSpan &values) {
  for (int64_t j0 = 0; j0 < values.n; j0 += kKeyBlock) {
    const int64_t j_end = std::min(values.n, j0 + kKeyBlock);
    for (int c = 0; c < values.dim; c += 64) {
      __m512 acc[NQ][4];
      for (int i = 0; i < NQ; ++i)
        for (int r = 0; r < 4; ++r)
          acc[i][r] = j0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(queries.out[i] + c + 16 * r);
      for (int64_t j = j0; j < j_end; ++j) {
        __m512 vv[4];
        for (int r = 0; r < 4; ++r)
          vv[r] = load16<T>(values, j, c + 16 * r);
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
          _mm512_storeu_ps(queries.out[i] + c + 16 * r, acc[i][r]);
    }
  }
}

// e^x for x <= 0, a softmax weight (exp_polynomial.hpp), times 2^n by scalef. Below -104, e^x is
// below f32's smallest denormal: 0. NaN stays NaN.
BONSAI_TARGET_AVX512 inline __m512 exp_nonpositive(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  namespace ep = exp_polynomial;
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(ep::kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(ep::kLn2High), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(ep::kLn2Low), r);
  __m512 p = _mm512_set1_ps(ep::kTaylor[0]);
#pragma GCC unroll 8
  for (size_t k = 1; k < std::size(ep::kTaylor); ++k)
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(ep::kTaylor[k]));
  return _mm512_scalef_ps(p, n);
}

} // namespace

void avx512_key_scores_multi(const QueryGroup &queries, const HeadSpan &keys, float scale,
                             float *out, int64_t out_stride) {
  with_query_count_and_kv(queries.n, keys.type, [&]<int NQ, KvType T>() {
    scores_for<NQ, T>(queries, keys, scale, out, out_stride);
  });
}

void avx512_weighted_values_multi(const float *p, int64_t p_stride, const QueryGroup &queries,
                                  const HeadSpan &values) {
  with_query_count_and_kv(queries.n, values.type, [&]<int NQ, KvType T>() {
    values_for<NQ, T>(p, p_stride, queries, values);
  });
}

BONSAI_TARGET_AVX512 float avx512_softmax_weights(float *scores, int64_t n) {
  __m512 max_v = _mm512_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    max_v = _mm512_max_ps(max_v, _mm512_loadu_ps(scores + j));
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - j)) - 1u);
  max_v = _mm512_max_ps(max_v, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail, scores + j));
  const __m512 max_score = _mm512_set1_ps(_mm512_reduce_max_ps(max_v));
  __m512 sum = _mm512_setzero_ps();
  for (j = 0; j + 16 <= n; j += 16) {
    const __m512 w = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(scores + j), max_score));
    _mm512_storeu_ps(scores + j, w);
    sum = _mm512_add_ps(sum, w);
  }
  const __m512 w =
      exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, scores + j), max_score));
  _mm512_mask_storeu_ps(scores + j, tail, w);
  sum = _mm512_mask_add_ps(sum, tail, sum, w);
  return _mm512_reduce_add_ps(sum);
}

} // namespace bonsai::cpu

#endif
