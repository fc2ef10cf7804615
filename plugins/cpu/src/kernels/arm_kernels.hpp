#pragma once
// The kernels of the AArch64 sets (arm_sets.cpp). Advanced SIMD ones run on
// every AArch64 CPU; the dotprod and i8mm ones carry target attributes and
// may only run after the dispatcher checked the CPU's HWCAP bits.
#include <cstdint>

#include "kernels/kernel_set.hpp"

namespace bonsai::cpu {

// quantize_act_row, vectorized for the layouts the AArch64 kernels read
// (Natural, Q1Lanes, Q2Lanes, Q1Tables; others: the scalar one).
void neon_quantize_act_row(const float *x, int64_t cols, QuantLayout layout,
                           const QuantTarget &out);

// F32, F16, BF16 rows; the f32 vector helpers and softmax of attention.
void neon_rows_float(const RowJob &job);
float neon_dot(const float *a, const float *b, int64_t n);
void neon_axpy(float alpha, const float *x, float *y, int64_t n);
float neon_softmax_weights(float *scores, int64_t n);
void neon_to_f16(const float *x, uint16_t *out, int64_t n);

// Attention on f32 or f16 caches (kernel_set.hpp): dim % 16 == 0.
void neon_key_scores(const float *q, const HeadSpan &keys, float scale, float *out);
void neon_weighted_values(const float *p, const HeadSpan &values, float *out);
void neon_key_scores_multi(const QueryGroup &queries, const HeadSpan &keys, float scale, float *out,
                           int64_t out_stride);
void neon_weighted_values_multi(const float *p, int64_t p_stride, const QueryGroup &queries,
                                const HeadSpan &values);

// Q1_0 in 32-row tiles of row-order sign lines against Q1Tables activations
// (TBL lookups; job.w at a tile, whole tiles only); one tile against
// n_tokens tokens of q (rows ldy apart in y), for the i8mm kernel's lone tokens.
void neon_rows_q1_tables(const RowJob &job);
void neon_q1_tables_tile(const uint8_t *tile, int64_t n_blocks, const QuantizedActs &q,
                         int n_tokens, float *y, int64_t ldy);
// The same tiles against Q1TablesAndValues activations: pairs of tokens by
// SMMLA on the values, a lone token by the table kernel; bit-identical to it.
void i8mm_rows_q1_tiles(const RowJob &job);

// GGUF rows against int8 activations: Q1_0 (Q1Lanes), Q2_0 and mainline
// Q2_0 (Q2Lanes), Q8_0 (Natural). The neon, dotprod and i8mm forms give the
// same floats (arm_quant_rows.hpp).
void neon_rows_q1(const RowJob &job);
void neon_rows_q2(const RowJob &job);
void neon_rows_q2_g64(const RowJob &job);
void neon_rows_q8(const RowJob &job);
void dotprod_rows_q1(const RowJob &job);
void dotprod_rows_q2(const RowJob &job);
void dotprod_rows_q2_g64(const RowJob &job);
void dotprod_rows_q8(const RowJob &job);

} // namespace bonsai::cpu
