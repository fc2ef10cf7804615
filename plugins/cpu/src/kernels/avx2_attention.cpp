// AVX2 attention for a group of queries that read the same KV head (the query
// heads of one KV head, and consecutive tokens in a prefill): each key and
// value vector, f32 or f16, is loaded once for up to kMaxQueries queries. A
// query's arithmetic does not depend on the group it is in or on where its
// keys fall, so a token gets bit-identical attention in prefill and decode.
#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>

#include <immintrin.h>

#include "kernels/simd_kernels.hpp"
#include "kernels/x86_helpers.hpp"

namespace bonsai::cpu {
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

// Scores of NQ queries against 2 keys at a time (2 * NQ accumulators, the
// two key vectors and a query vector fit the 16 registers); dim % 8 == 0.
// A last odd key is paired with itself.
template <int NQ, KvType T>
BONSAI_TARGET_AVX2 void scores_for(const QueryGroup &queries, const HeadSpan &keys, float scale,
                                   float *out, int64_t out_stride) {
  for (int64_t j = 0; j < keys.n; j += 2) {
    const int64_t pos[2] = {j, std::min(j + 1, keys.n - 1)};
    __m256 acc[NQ][2];
    for (int i = 0; i < NQ; ++i)
      acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int c = 0; c < keys.dim; c += 8) {
      const __m256 k0 = load8<T>(keys, pos[0], c);
      const __m256 k1 = load8<T>(keys, pos[1], c);
#pragma GCC unroll 4
      for (int i = 0; i < NQ; ++i) {
        const __m256 qv = _mm256_loadu_ps(queries.q[i] + c);
        acc[i][0] = _mm256_fmadd_ps(qv, k0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(qv, k1, acc[i][1]);
      }
    }
    for (int i = 0; i < NQ; ++i) {
      out[i * out_stride + j] = hsum256(acc[i][0]) * scale;
      if (j + 1 < keys.n)
        out[i * out_stride + j + 1] = hsum256(acc[i][1]) * scale;
    }
  }
}

// out_i = sum_j p_i[j] value_j for NQ rows of weights; dim % 16 == 0. Blocks
// of kKeyBlock keys keep their value rows in L1 while 16 dimensions at a time
// are summed for every query; each output is summed over the keys in index
// order, one fused multiply-add each (a block's partial sums pass through
// `out` exactly).
constexpr int64_t kKeyBlock = 64;
template <int NQ, KvType T>
BONSAI_TARGET_AVX2 void values_for(const float *p, int64_t p_stride, const QueryGroup &queries,
                                   const HeadSpan &values) {
  for (int64_t j0 = 0; j0 < values.n; j0 += kKeyBlock) {
    const int64_t j_end = std::min(values.n, j0 + kKeyBlock);
    for (int c = 0; c < values.dim; c += 16) {
      __m256 acc[NQ][2];
      for (int i = 0; i < NQ; ++i)
        for (int r = 0; r < 2; ++r)
          acc[i][r] = j0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(queries.out[i] + c + 8 * r);
      for (int64_t j = j0; j < j_end; ++j) {
        const __m256 v0 = load8<T>(values, j, c);
        const __m256 v1 = load8<T>(values, j, c + 8);
#pragma GCC unroll 4
        for (int i = 0; i < NQ; ++i) {
          const __m256 pij = _mm256_set1_ps(p[i * p_stride + j]);
          acc[i][0] = _mm256_fmadd_ps(pij, v0, acc[i][0]);
          acc[i][1] = _mm256_fmadd_ps(pij, v1, acc[i][1]);
        }
      }
      for (int i = 0; i < NQ; ++i)
        for (int r = 0; r < 2; ++r)
          _mm256_storeu_ps(queries.out[i] + c + 8 * r, acc[i][r]);
    }
  }
}

template <KvType T>
void key_scores_multi(const QueryGroup &queries, const HeadSpan &keys, float scale, float *out,
                      int64_t out_stride) {
  switch (queries.n) {
  case 1:
    return scores_for<1, T>(queries, keys, scale, out, out_stride);
  case 2:
    return scores_for<2, T>(queries, keys, scale, out, out_stride);
  case 3:
    return scores_for<3, T>(queries, keys, scale, out, out_stride);
  default:
    return scores_for<4, T>(queries, keys, scale, out, out_stride);
  }
}

template <KvType T>
void weighted_values_multi(const float *p, int64_t p_stride, const QueryGroup &queries,
                           const HeadSpan &values) {
  switch (queries.n) {
  case 1:
    return values_for<1, T>(p, p_stride, queries, values);
  case 2:
    return values_for<2, T>(p, p_stride, queries, values);
  case 3:
    return values_for<3, T>(p, p_stride, queries, values);
  default:
    return values_for<4, T>(p, p_stride, queries, values);
  }
}

} // namespace

void avx2_key_scores_multi(const QueryGroup &queries, const HeadSpan &keys, float scale, float *out,
                           int64_t out_stride) {
  if (keys.type == KvType::F16)
    key_scores_multi<KvType::F16>(queries, keys, scale, out, out_stride);
  else
    key_scores_multi<KvType::F32>(queries, keys, scale, out, out_stride);
}

void avx2_weighted_values_multi(const float *p, int64_t p_stride, const QueryGroup &queries,
                                const HeadSpan &values) {
  if (values.type == KvType::F16)
    weighted_values_multi<KvType::F16>(p, p_stride, queries, values);
  else
    weighted_values_multi<KvType::F32>(p, p_stride, queries, values);
}

} // namespace bonsai::cpu

#endif
