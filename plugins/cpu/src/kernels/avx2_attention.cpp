// AVX2 attention: one query against a head's keys and values, and a group of
// queries that read the same KV head (the query heads of one KV head, and
// consecutive tokens in a prefill), where each key and value vector, f32 or
// f16, is loaded once for up to kMaxQueries queries. A query's arithmetic
// does not depend on the group it is in or on where its keys fall, so a token
// gets bit-identical attention in prefill and decode.
#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>

#include <immintrin.h>

#include "kernels/simd_kernels.hpp"
#include "kernels/template_dispatch.hpp"
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

void avx2_key_scores_multi(const QueryGroup &queries, const HeadSpan &keys, float scale, float *out,
                           int64_t out_stride) {
  with_query_count_and_kv(queries.n, keys.type, [&]<int NQ, KvType T>() {
    scores_for<NQ, T>(queries, keys, scale, out, out_stride);
  });
}

void avx2_weighted_values_multi(const float *p, int64_t p_stride, const QueryGroup &queries,
                                const HeadSpan &values) {
  with_query_count_and_kv(queries.n, values.type, [&]<int NQ, KvType T>() {
    values_for<NQ, T>(p, p_stride, queries, values);
  });
}

} // namespace bonsai::cpu

#endif
