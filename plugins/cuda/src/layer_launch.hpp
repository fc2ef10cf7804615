#pragma once
// Launch helpers the layer code of every mixer kind shares (step.cpp,
// delta_net_layer.cpp): row offsets, RMSNorm, and matmuls that share one
// normed input.
#include <cstdint>

#include "context.hpp"
#include "launch.hpp"

namespace bonsai::cuda {

// Row `row` of f32 rows `width` wide.
inline CUdeviceptr row_offset(CUdeviceptr base, int row, int64_t width) {
  return base + static_cast<CUdeviceptr>(row) * static_cast<CUdeviceptr>(width) * sizeof(float);
}

// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight for n_tokens rows of n.
void launch_rmsnorm(const Context &ctx, CUdeviceptr x, CUdeviceptr weight, CUdeviceptr out,
                    int n_tokens, int n, float eps);

// outs_i = W_i (RMSNorm(x) * norm) for the step's n rows of the hidden
// state: one int8 GEMV launch with the norm fused where it applies (up to
// kMaxInt8GemvTokens tokens), else the norm into act.h and a matmul each.
void normed_matmuls(const Context &ctx, const BoundModel &m, const MatmulGroup &group,
                    CUdeviceptr norm, int n);

// out += W in (a residual projection) for the step's n rows of `in`.
void residual_matmul(const Context &ctx, const BoundModel &m, const Weight &w, CUdeviceptr in,
                     CUdeviceptr out, int n);

} // namespace bonsai::cuda
