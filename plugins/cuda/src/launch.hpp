#pragma once
// Kernel launches with typed arguments, and the matmul launch shared by the
// ABI's matmul() and the layer code.
#include <cstdint>

#include "device.hpp"
#include "kernels.hpp"
#include "weight.hpp"

namespace bonsai::cuda {

// cuLaunchKernel with `args` passed by value (their addresses live for the
// call, which is all the driver needs).
template <class... Args>
void launch(const Device &device, CUfunction function, const LaunchShape &shape, Args... args) {
  void *params[] = {static_cast<void *>(&args)...};
  device.launch(function, shape, params);
}

// Threads per block for a kernel where thread i owns element i of a head.
inline unsigned threads_for(int n) {
  return static_cast<unsigned>((n + 31) / 32 * 32);
}

// The input rows of the int8 GEMVs, one per token: x, or RMSNorm(x) * norm
// when norm is not 0.
struct NormedInput {
  CUdeviceptr x = 0;
  CUdeviceptr norm = 0; // f32 vector of x's row length, or 0
  float eps = 0.0f;
  // Device scratch of int8_staging_bytes(cols) per token where the int8
  // path quantizes each row once for all its blocks, or 0: each block
  // quantizes its token's row.
  CUdeviceptr staging = 0;
  int n_tokens = 1; // rows of x, at most kMaxInt8GemvTokens
};

// Bytes of one token's quantized input row of `cols` columns
// (kernels/int8_input.cuh), rounded up to 16 so that rows stay aligned.
int64_t int8_staging_bytes(int64_t cols);

// Steps of up to this many tokens (several sequences decoding together, a
// short prompt) run their Q1_0/Q2_0 matmuls on the int8 GEMVs, one token per
// grid row; longer ones on the tensor-core GEMMs.
inline constexpr int kMaxInt8GemvTokens = 8;

// Up to kMaxGroupWeights matmuls that share their input (Q, K and V).
inline constexpr int kMaxGroupWeights = 3; // DP4A_MAX_TARGETS of gemv_dp4a.cuh
struct MatmulGroup {
  const Weight *weights[kMaxGroupWeights] = {};
  CUdeviceptr outs[kMaxGroupWeights] = {};
  int n = 0;
};

// A group of one: out = W x.
MatmulGroup single_matmul(const Weight &w, CUdeviceptr out);

// The group as one int8 GEMV launch (kernels/gemv_dp4a.cuh) with the norm
// fused, out_i = W_i in (+ out_i when accumulate). Returns false and
// launches nothing when the int8 GEMVs do not apply (option off, weight
// types without them, mixed types or widths, too many columns or tokens).
bool launch_int8_group(const Device &device, const Kernels &kernels, const MatmulGroup &group,
                       const NormedInput &in, bool accumulate);

// out = silu(Wg in) * (Wu in) as one int8 launch; false as above.
bool launch_int8_swiglu(const Device &device, const Kernels &kernels, const Weight &gate,
                        const Weight &up, const NormedInput &in, CUdeviceptr out);

// The rows a matmul reads and writes (device pointers).
struct MatmulRows {
  CUdeviceptr x = 0;   // n_tokens rows of the weight's columns
  CUdeviceptr out = 0; // n_tokens rows of the weight's rows
  int n_tokens = 0;
  // Device scratch of int8_staging_bytes(cols) * n_tokens bytes where the
  // int8 kernels (GEMVs, tensor-core GEMM) quantize x first, or 0: the
  // tensor-core GEMM is not used and each GEMV block quantizes its row.
  CUdeviceptr int8_scratch = 0;
};

// out[t] = W x[t] for each row; `accumulate` adds into out instead
// (residual connections).
void launch_matmul(const Device &device, const Kernels &kernels, const Weight &w,
                   const MatmulRows &rows, bool accumulate);

// out[t] = silu(Wg x[t]) * (Wu x[t]).
void launch_swiglu(const Device &device, const Kernels &kernels, const Weight &gate,
                   const Weight &up, const MatmulRows &rows);

// out[t] = W[ids[t]] as f32 (ids in device memory).
void launch_get_rows(const Device &device, const Kernels &kernels, const Weight &w, CUdeviceptr ids,
                     CUdeviceptr out, int n_tokens);

} // namespace bonsai::cuda
