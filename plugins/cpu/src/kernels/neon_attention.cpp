// Advanced SIMD attention: a group of up to kMaxQueries queries that read
// the same KV head (the query heads of one KV head, and consecutive tokens
// in a prefill), where each key and value vector, f32 or f16, is loaded once
// for every query of the group; one query alone is a group of one. A
// query's arithmetic does not depend on the group it is in or on where its
// keys fall, so a token gets bit-identical attention in prefill and decode.
#if defined(__aarch64__)

#include <algorithm>

#include "kernels/arm_helpers.hpp"
#include "kernels/arm_kernels.hpp"
#include "kernels/template_dispatch.hpp"

namespace bonsai::cpu {
namespace {

// Four values of position `pos` from dimension c on, as f32.
template <KvType T> inline float32x4_t load4(const HeadSpan &span, int64_t pos, int c) {
  if constexpr (T == KvType::F16)
    return load4_f16(span.f16() + pos * span.stride + c);
  else
    return vld1q_f32(span.f32() + pos * span.stride + c);
}

// Scores of NQ queries against 4 keys at a time, one accumulator per query
// and key (dim % 4 == 0). A last partial group repeats its last key in the
// unused slots, so every score is computed the same way wherever its key
// falls. The four keys' sums of a query are reduced together, each in
// sum_lanes' order.
template <int NQ, KvType T>
void scores_for(const QueryGroup &queries, const HeadSpan &keys, float scale, float *out,
                int64_t out_stride) {
  const float32x4_t scale_v = vdupq_n_f32(scale);
  for (int64_t j = 0; j < keys.n; j += 4) {
    const int valid = static_cast<int>(std::min<int64_t>(4, keys.n - j));
    int64_t pos[4];
    for (int r = 0; r < 4; ++r)
      pos[r] = j + std::min(r, valid - 1);
    float32x4_t acc[NQ][4];
    for (int i = 0; i < NQ; ++i)
      for (int r = 0; r < 4; ++r)
        acc[i][r] = vdupq_n_f32(0.0f);
    for (int c = 0; c < keys.dim; c += 4) {
      float32x4_t k[4];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r)
        k[r] = load4<T>(keys, pos[r], c);
#pragma GCC unroll 4
      for (int i = 0; i < NQ; ++i) {
        const float32x4_t qv = vld1q_f32(queries.q[i] + c);
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
          acc[i][r] = vfmaq_f32(acc[i][r], qv, k[r]);
      }
    }
    for (int i = 0; i < NQ; ++i) {
      // Lane r: (a0 + a1) + (a2 + a3) of key r's accumulator.
      const float32x4_t sums =
          vpaddq_f32(vpaddq_f32(acc[i][0], acc[i][1]), vpaddq_f32(acc[i][2], acc[i][3]));
      alignas(16) float lanes[4];
      vst1q_f32(lanes, vmulq_f32(sums, scale_v));
      for (int r = 0; r < valid; ++r)
        out[i * out_stride + j + r] = lanes[r];
    }
  }
}

// out_i = sum_j p_i[j] value_j for NQ rows of weights (dim % 16 == 0).
// Blocks of kKeyBlock keys keep their value rows in L1 while 16 dimensions
// at a time are summed for every query; each output is summed over the keys
// in index order, one fused multiply-add each (a block's partial sums pass
// through `out` exactly).
constexpr int64_t kKeyBlock = 64;
template <int NQ, KvType T>
void values_for(const float *p, int64_t p_stride, const QueryGroup &queries,
                const HeadSpan &values) {
  for (int64_t j0 = 0; j0 < values.n; j0 += kKeyBlock) {
    const int64_t j_end = std::min(values.n, j0 + kKeyBlock);
    for (int c = 0; c < values.dim; c += 16) {
      float32x4_t acc[NQ][4];
      for (int i = 0; i < NQ; ++i)
        for (int r = 0; r < 4; ++r)
          acc[i][r] = j0 == 0 ? vdupq_n_f32(0.0f) : vld1q_f32(queries.out[i] + c + 4 * r);
      for (int64_t j = j0; j < j_end; ++j) {
        float32x4_t v[4];
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
          v[r] = load4<T>(values, j, c + 4 * r);
#pragma GCC unroll 4
        for (int i = 0; i < NQ; ++i) {
          const float pij = p[i * p_stride + j];
#pragma GCC unroll 4
          for (int r = 0; r < 4; ++r)
            acc[i][r] = vfmaq_n_f32(acc[i][r], v[r], pij);
        }
      }
      for (int i = 0; i < NQ; ++i)
        for (int r = 0; r < 4; ++r)
          vst1q_f32(queries.out[i] + c + 4 * r, acc[i][r]);
    }
  }
}

QueryGroup single_query(const float *q, float *out) {
  QueryGroup group;
  group.q[0] = q;
  group.out[0] = out;
  group.n = 1;
  return group;
}

} // namespace

void neon_key_scores(const float *q, const HeadSpan &keys, float scale, float *out) {
  neon_key_scores_multi(single_query(q, nullptr), keys, scale, out, 0);
}

void neon_weighted_values(const float *p, const HeadSpan &values, float *out) {
  neon_weighted_values_multi(p, 0, single_query(nullptr, out), values);
}

void neon_key_scores_multi(const QueryGroup &queries, const HeadSpan &keys, float scale, float *out,
                           int64_t out_stride) {
  with_query_count_and_kv(queries.n, keys.type, [&]<int NQ, KvType T>() {
    scores_for<NQ, T>(queries, keys, scale, out, out_stride);
  });
}

void neon_weighted_values_multi(const float *p, int64_t p_stride, const QueryGroup &queries,
                                const HeadSpan &values) {
  with_query_count_and_kv(queries.n, values.type, [&]<int NQ, KvType T>() {
    values_for<NQ, T>(p, p_stride, queries, values);
  });
}

} // namespace bonsai::cpu

#endif
