#pragma once
// Row kernels of the SIMD sets (defined with target attributes, so they may
// only run after the dispatcher checked CPUID).
#include <cstdint>

#include "kernels/kernel_set.hpp"

namespace bonsai::cpu {

void avx2_rows_q1(const RowJob &job);
void avx2_rows_q2(const RowJob &job);
void avx2_rows_q8(const RowJob &job);
void avx2_rows_q2_g64(const RowJob &job); // mainline Q2_0, Q2Lanes activations
void avx2_rows_float(const RowJob &job);  // F32, F16, BF16
float avx2_dot(const float *a, const float *b, int64_t n);
void avx2_axpy(float alpha, const float *x, float *y, int64_t n);
void avx2_key_scores(const float *q, const HeadSpan &keys, float scale, float *out);
void avx2_weighted_values(const float *p, const HeadSpan &values, float *out);
float avx2_softmax_weights(float *scores, int64_t n);
void avx2_to_f16(const float *x, uint16_t *out, int64_t n);

void avx512_rows_q1(const RowJob &job);
// AVX-VNNI (256-bit vpdpbusd): Q1_0, Q2_0 and mainline Q2_0 rows, bit-identical to avx2's.
void avxvnni_rows_q1(const RowJob &job);
void avxvnni_rows_q2(const RowJob &job);
void avxvnni_rows_q2_g64(const RowJob &job);
// Multi-query attention (kernel_set.hpp) on AVX2: dim % 16 == 0.
void avx2_key_scores_multi(const QueryGroup &queries, const HeadSpan &keys, float scale, float *out,
                           int64_t out_stride);
void avx2_weighted_values_multi(const float *p, int64_t p_stride, const QueryGroup &queries,
                                const HeadSpan &values);
void avx512_key_scores_multi(const QueryGroup &queries, const HeadSpan &keys, float scale,
                             float *out, int64_t out_stride);
void avx512_weighted_values_multi(const float *p, int64_t p_stride, const QueryGroup &queries,
                                  const HeadSpan &values);
float avx512_softmax_weights(float *scores, int64_t n);
// Q1_0 in 32-row tiles (q1_tiles.hpp; job.w at a tile, whole tiles only)
// against Q1Tables activations: the AVX2 table kernel.
void avx2_rows_q1_tables(const RowJob &job);
// Q1_0 in 32-row tiles of nibble masks against Natural activations: the
// AVX-512 mask kernel.
void avx512_rows_q1_tiles(const RowJob &job);
// quantize_act_row, vectorized for the AVX2 layouts (Natural, Q1Lanes,
// Q2Lanes; others: the scalar one).
void avx2_quantize_act_row(const float *x, int64_t cols, QuantLayout layout,
                           const QuantTarget &out);
// quantize_act_row, vectorized for the 512 layouts (others: the scalar one).
void avx512_quantize_act_row(const float *x, int64_t cols, QuantLayout layout,
                             const QuantTarget &out);
void avx512_rows_q2(const RowJob &job);
void avx512_rows_q2_g64(const RowJob &job); // mainline Q2_0, Q2Lanes512 activations

} // namespace bonsai::cpu
