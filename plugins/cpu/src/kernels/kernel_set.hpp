#pragma once
// A kernel set: one row kernel per weight type plus the f32 vector helpers
// attention uses. Chosen once per context (reference, AVX2 or AVX-512).
#include <cstddef>
#include <cstdint>
#include <string>

#include "activations.hpp"
#include "bonsai/core/formats.hpp"
#include "cpu_features.hpp"
#include "options.hpp"

namespace bonsai::cpu {

enum class WeightKind : int { F32, F16, BF16, Q8_0, Q1_0, Q2_0, Q2_0_G64 };
inline constexpr int kWeightKinds = 7;
WeightKind weight_kind(GgmlType type); // only for supported types

// Computes y[t * ldy + i] = sum_c W[r0 + i][c] * x_t[c] for i < n_rows and
// t < n_tokens. Float kernels and the reference read `x`; quantized fast
// kernels read `q` (already quantized in the layout the set asks for).
// Every output is computed independently of how rows and tokens are split
// into jobs, so results are bit-identical however the work is scheduled.
struct RowJob {
  GgmlType type = GgmlType::F32;
  const uint8_t *w = nullptr; // first row's bytes
  size_t w_row_bytes = 0;
  int64_t cols = 0;
  int64_t n_rows = 0;
  int n_tokens = 0;
  const float *x = nullptr;
  int64_t ldx = 0;
  QuantizedActs q;
  float *y = nullptr;
  int64_t ldy = 0;
};
using RowKernel = void (*)(const RowJob &);

// The vectors of one attention head at positions 0..n-1 of the KV cache.
struct HeadSpan {
  const float *base = nullptr; // position 0
  int64_t stride = 0;          // floats from one position to the next
  int64_t n = 0;               // positions
  int dim = 0;                 // head_dim
};

// Up to kMaxQueries query vectors of one head, q_stride floats apart.
inline constexpr int kMaxQueries = 4;
struct MultiQuery {
  const float *q = nullptr;
  int64_t q_stride = 0;
  int n = 0; // 1..kMaxQueries
};

struct KernelSet {
  const char *name = "";
  // Exact sets accumulate in double and use double transcendental functions
  // in norms, softmax and SiLU too.
  bool exact = false;
  RowKernel rows[kWeightKinds] = {};
  bool quantized_input[kWeightKinds] = {};
  QuantLayout layout[kWeightKinds] = {};
  QuantizeRowFn quantize = quantize_act_row; // activation quantizer for the layouts above
  float (*dot)(const float *a, const float *b, int64_t n) = nullptr;
  void (*axpy)(float alpha, const float *x, float *y, int64_t n) = nullptr; // y += alpha x
  // Optional whole-head attention helpers (used when dim % 16 == 0):
  // out[j] = scale * dot(q, key j) and out = sum_j p[j] * value j.
  void (*key_scores)(const float *q, const HeadSpan &keys, float scale, float *out) = nullptr;
  void (*weighted_values)(const float *p, const HeadSpan &values, float *out) = nullptr;
  // Optional multi-query forms (dim % 64 == 0), so that the queries of up to
  // kMaxQueries tokens share every key and value load:
  // out[i * out_stride + j] = scale * dot(q_i, key j), and
  // out_i = sum_j p[i * p_stride + j] * value j for i < n_rows.
  void (*key_scores_multi)(const MultiQuery &queries, const HeadSpan &keys, float scale, float *out,
                           int64_t out_stride) = nullptr;
  void (*weighted_values_multi)(const float *p, int64_t p_stride, int n_rows,
                                const HeadSpan &values, float *out, int64_t out_stride) = nullptr;
};

const KernelSet &reference_kernel_set();
const KernelSet *avx2_kernel_set();   // nullptr when not built for x86-64
const KernelSet *avx512_kernel_set(); // nullptr when not built for x86-64

struct KernelSelection {
  const KernelSet *set = nullptr;
  std::string reason; // for the debug log
};
// Throws PluginError(UNSUPPORTED) when a forced set needs missing features.
KernelSelection select_kernel_set(KernelChoice choice, const CpuFeatures &cpu);

} // namespace bonsai::cpu
