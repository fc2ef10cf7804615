#pragma once
// A kernel set: one row kernel per weight type plus the f32 vector helpers
// attention uses. Chosen once per context (reference; AVX2, AVX-VNNI or
// AVX-512 on x86-64; NEON, dotprod or i8mm on AArch64).
#include <cstddef>
#include <cstdint>
#include <string>

#include "activations.hpp"
#include "bonsai/core/formats.hpp"
#include "cpu_features.hpp"
#include "options.hpp"
#include "tile_format.hpp"

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

// How the KV cache stores keys and values: f32, or IEEE half (half the bytes
// read per key, which is what bounds decode at long context).
enum class KvType : uint8_t { F32, F16 };
inline size_t kv_type_bytes(KvType type) {
  return type == KvType::F16 ? 2 : 4;
}

// The vectors of one attention head at positions 0..n-1 of the KV cache.
struct HeadSpan {
  const void *base = nullptr; // position 0, `type` elements
  KvType type = KvType::F32;  // element type
  int64_t stride = 0;         // elements from one position to the next
  int64_t n = 0;              // positions
  int dim = 0;                // head_dim

  const float *f32() const { return static_cast<const float *>(base); }
  const uint16_t *f16() const { return static_cast<const uint16_t *>(base); }
};

// Up to kMaxQueries queries that read the same keys and values: the query
// heads of one KV head (grouped-query attention) and/or consecutive tokens.
inline constexpr int kMaxQueries = 4;
struct QueryGroup {
  const float *q[kMaxQueries] = {}; // each query's head_dim values
  float *out[kMaxQueries] = {};     // where each query's weighted sum goes
  int n = 0;                        // 1..kMaxQueries
};

// A kernel for matrices stored in 32-row tiles (tile_format.hpp): job.w at a
// tile, whole tiles only, activations quantized in `layout`.
struct TiledKernel {
  RowKernel rows = nullptr; // nullptr: the set reads this type in GGUF rows
  TileFormat format = TileFormat::None;
  QuantLayout layout = QuantLayout::Natural;
};

float softmax_weights_scalar(float *scores, int64_t n);
void to_f16_scalar(const float *x, uint16_t *out, int64_t n);

struct KernelSet {
  const char *name = "";
  // Exact sets accumulate in double and use double transcendental functions
  // in norms, softmax and SiLU too.
  bool exact = false;
  RowKernel rows[kWeightKinds] = {};
  bool quantized_input[kWeightKinds] = {};
  QuantLayout layout[kWeightKinds] = {};
  QuantizeRowFn quantize = quantize_act_row; // activation quantizer for the layouts above
  // Where tiled[kind].rows is set, a context stores its matrices of that
  // kind in 32-row tiles of tiled[kind].format where their shape allows, and
  // every matmul of a tiled weight runs that kernel, whatever its number of
  // tokens, instead of rows[kind].
  TiledKernel tiled[kWeightKinds] = {};
  float (*dot)(const float *a, const float *b, int64_t n) = nullptr;
  void (*axpy)(float alpha, const float *x, float *y, int64_t n) = nullptr; // y += alpha x
  // Optional whole-head attention helpers for f32 or f16 spans (used when
  // dim % 16 == 0): out[j] = scale * dot(q, key j) and out = sum_j p[j] value j.
  void (*key_scores)(const float *q, const HeadSpan &keys, float scale, float *out) = nullptr;
  void (*weighted_values)(const float *p, const HeadSpan &values, float *out) = nullptr;
  // Optional multi-query forms (dim % 64 == 0), so that every query of a
  // group shares each key and value load:
  // scores[i * scores_stride + j] = scale * dot(q_i, key j), and
  // out_i = sum_j p[i * p_stride + j] * value j.
  void (*key_scores_multi)(const QueryGroup &queries, const HeadSpan &keys, float scale,
                           float *scores, int64_t scores_stride) = nullptr;
  void (*weighted_values_multi)(const float *p, int64_t p_stride, const QueryGroup &queries,
                                const HeadSpan &values) = nullptr;
  // Scores [0, n) -> exp(score - max) in place; returns their sum. Elementwise
  // results depend only on the score and the row's max, and the sum only on
  // n, so a token's weights are the same in a prefill and a decode step.
  float (*softmax_weights)(float *scores, int64_t n) = softmax_weights_scalar;
  // f32 -> IEEE half, round to nearest even (keys and values into the cache).
  void (*to_f16)(const float *x, uint16_t *out, int64_t n) = to_f16_scalar;

  // Sets the row kernel of `kind`, whether it reads quantized activations,
  // and in which layout.
  void use_rows(WeightKind kind, RowKernel kernel, bool quantized, QuantLayout act_layout) {
    rows[static_cast<int>(kind)] = kernel;
    quantized_input[static_cast<int>(kind)] = quantized;
    layout[static_cast<int>(kind)] = act_layout;
  }
};

const KernelSet &reference_kernel_set();
const KernelSet *avx2_kernel_set();    // nullptr when not built for x86-64
const KernelSet *avx512_kernel_set();  // nullptr when not built for x86-64
const KernelSet *avxvnni_kernel_set(); // nullptr when not built for x86-64
const KernelSet *neon_kernel_set();    // nullptr when not built for AArch64
const KernelSet *dotprod_kernel_set(); // nullptr when not built for AArch64
const KernelSet *i8mm_kernel_set();    // nullptr when not built for AArch64

struct KernelSelection {
  const KernelSet *set = nullptr;
  std::string reason; // for the debug log
};
// Throws PluginError(UNSUPPORTED) when a forced set needs missing features
// or is built only for another architecture.
KernelSelection select_kernel_set(KernelChoice choice, const CpuFeatures &cpu);

} // namespace bonsai::cpu
