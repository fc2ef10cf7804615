#pragma once
// For the row-kernel tests (q1_tiles_test.cpp, avxvnni_test.cpp,
// step_size_test.cpp):
// activations quantized by a kernel set, a RowJob over them, and the kernel
// sets with a tiled kernel for a weight kind that this CPU runs.
#include <cstdio>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "activations.hpp"
#include "cpu_features.hpp"
#include "kernels/kernel_set.hpp"

namespace bonsai::cpu::test {

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> d, dsum;
  int64_t stride = 1;
};

inline Quantized quantize(const KernelSet &set, QuantLayout layout, const std::vector<float> &x,
                          int64_t cols, int n_tokens) {
  Quantized out;
  const int64_t blocks = cols / kActBlock;
  out.stride = padded_token_stride(n_tokens);
  out.q.resize(static_cast<size_t>(blocks * out.stride * q_block_bytes(layout)));
  out.d.resize(static_cast<size_t>(blocks * out.stride * meta_per_block(layout)));
  out.dsum.resize(static_cast<size_t>(blocks * out.stride));
  for (int t = 0; t < n_tokens; ++t)
    set.quantize(x.data() + static_cast<size_t>(t) * cols, cols, layout,
                 {out.q.data() + t * q_block_bytes(layout),
                  out.d.data() + t * meta_per_block(layout), out.dsum.data() + t, out.stride});
  return out;
}

// A job of `rows` rows (row_bytes each in GGUF order, tiled or not) against
// n_tokens quantized tokens, writing y (rows x n_tokens, zeroed).
struct JobShape {
  GgmlType type = GgmlType::Q1_0;
  size_t row_bytes = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int n_tokens = 1;
};

inline RowJob job_for(const JobShape &shape, const std::vector<uint8_t> &w, const Quantized &q,
                      QuantLayout layout, std::vector<float> &y) {
  RowJob job;
  job.type = shape.type;
  job.w = w.data();
  job.w_row_bytes = shape.row_bytes;
  job.cols = shape.cols;
  job.n_rows = shape.rows;
  job.n_tokens = shape.n_tokens;
  job.q = {shape.cols, shape.cols / kActBlock, shape.n_tokens,
           q.stride,   meta_per_block(layout), q.q.data(),
           q.d.data(), q.dsum.data(),          q_block_bytes(layout)};
  y.assign(static_cast<size_t>(shape.rows) * shape.n_tokens, 0.0f);
  job.y = y.data();
  job.ldy = shape.rows;
  return job;
}

// The set's row kernel for `kind` over n_tokens tokens of x (cols each):
// y[t * rows + r].
inline std::vector<float> rows_of(const KernelSet &set, GgmlType type, WeightKind kind,
                                  const std::vector<uint8_t> &w, size_t row_bytes, int64_t rows,
                                  int64_t cols, const std::vector<float> &x, int n_tokens) {
  const QuantLayout layout = set.layout[static_cast<int>(kind)];
  std::vector<float> y;
  set.rows[static_cast<int>(kind)](job_for({type, row_bytes, rows, cols, n_tokens}, w,
                                           quantize(set, layout, x, cols, n_tokens), layout, y));
  return y;
}

inline std::vector<float> random_inputs(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float &v : x)
    v = value(rng);
  return x;
}

// A built kernel set (nullptr: not built for this machine) and whether this
// CPU runs it.
struct CandidateSet {
  const KernelSet *set;
  bool runs;
};

// The built candidates that `wanted` accepts and this CPU can run; the ones
// it accepts but cannot run are printed as skipped.
template <class Wanted>
std::vector<const KernelSet *> runnable_sets(std::initializer_list<CandidateSet> candidates,
                                             Wanted &&wanted) {
  std::vector<const KernelSet *> sets;
  std::string skipped;
  for (const CandidateSet &c : candidates) {
    if (c.set == nullptr || !wanted(*c.set))
      continue;
    if (c.runs)
      sets.push_back(c.set);
    else
      skipped += std::string(skipped.empty() ? "" : ", ") + c.set->name;
  }
  if (!skipped.empty())
    std::printf("skipped: this CPU cannot run %s (%s)\n", skipped.c_str(),
                cpu_features().describe().c_str());
  return sets;
}

// The kernel sets with a tiled kernel for `kind` that this CPU can run
// (a set built for another architecture is not a candidate).
inline std::vector<const KernelSet *> tiled_sets(WeightKind kind) {
  const CpuFeatures &cpu = cpu_features();
  return runnable_sets(
      {{avx2_kernel_set(), cpu.has_avx2_set()},
       {avx512_kernel_set(), cpu.has_avx512_set()},
       {neon_kernel_set(), cpu.has_neon_set()},
       {dotprod_kernel_set(), cpu.has_dotprod_set()},
       {i8mm_kernel_set(), cpu.has_i8mm_set()}},
      [kind](const KernelSet &set) { return set.tiled[static_cast<int>(kind)].rows != nullptr; });
}

} // namespace bonsai::cpu::test
