#pragma once
// Parallel GEMV/GEMM over uploaded weights. Work is split into tasks of
// kRowChunk rows x kTokenBlock tokens and run on the context's task arena.
// Several matrices that read the same input (Q/K/V) run in one parallel
// region, and the input is quantized at most once per layout.
#include <cstdint>
#include <initializer_list>

#include <oneapi/tbb/task_arena.h>

#include "activations.hpp"
#include "kernels/kernel_set.hpp"
#include "weight.hpp"

namespace bonsai::cpu {

inline constexpr int64_t kRowChunk = 32;
inline constexpr int kTokenBlock = 64;
// A task covers at most this many (row, token) outputs, and at least
// kRowChunk rows: small batches (decode) get tasks of up to 256 rows so
// the per-task cost of the scheduler stays small against the work.
inline constexpr int64_t kTaskOutputs = kRowChunk * kTokenBlock;
inline constexpr int64_t kMaxTaskRows = 256;

// Storage for quantized activations, one buffer per layout.
struct ActScratch {
  QuantBuffer buffers[kQuantLayouts];
};

// One matmul input: n_tokens f32 rows of `cols` values (row stride ldx),
// quantized on first request for each layout.
class ActInput {
public:
  ActInput(const float *x, int64_t ldx, int n_tokens, int64_t cols, ActScratch &scratch)
      : x_(x), ldx_(ldx), n_tokens_(n_tokens), cols_(cols), scratch_(scratch) {}

  const float *x() const { return x_; }
  int64_t ldx() const { return ldx_; }
  int n_tokens() const { return n_tokens_; }
  int64_t cols() const { return cols_; }
  const QuantizedActs &quantized(QuantLayout layout, QuantizeRowFn quantize,
                                 oneapi::tbb::task_arena &arena);

private:
  const float *x_;
  int64_t ldx_;
  int n_tokens_;
  int64_t cols_;
  ActScratch &scratch_;
  QuantizedActs views_[kQuantLayouts];
  bool ready_[kQuantLayouts] = {};
};

// y[t * ldy + r] = (W x_t)[r]; with `up` set, the SwiGLU product
// y = silu(W x_t) * (up x_t) instead (W is then the gate).
struct MatmulTarget {
  const Weight *w = nullptr;
  float *y = nullptr;
  int64_t ldy = 0;
  const Weight *up = nullptr;
};

class MatmulRunner {
public:
  MatmulRunner(oneapi::tbb::task_arena &arena, const KernelSet &kernels)
      : arena_(arena), kernels_(kernels) {}
  void run(ActInput &in, std::initializer_list<MatmulTarget> targets);

private:
  oneapi::tbb::task_arena &arena_;
  const KernelSet &kernels_;
};

} // namespace bonsai::cpu
