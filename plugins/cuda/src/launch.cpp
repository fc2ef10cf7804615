#include "launch.hpp"

#include <string>

#include "kernel_sources.hpp"

namespace bonsai::cuda {
namespace {

constexpr int kWarpsPerBlock = 4; // rows per block in the matmul kernels
constexpr int kGemmTokens = 8;    // tokens per tile of the bonsai_gemm_* kernels

std::string kernel_name(const char *kind, const Weight &w) {
  return std::string(kind) + kernel_type_suffix(w.layout.type);
}

// Tensor-core tiles (kernels/matmul_tc.cuh): 64 rows x 32 tokens, 4 warps.
constexpr int kTcRows = 64;
constexpr int kTcTokens = 32;
// Below this many tokens the CUDA-core kernels waste less of a tile.
constexpr int kTcMinTokens = 9;

// The tensor-core kernel for w and n_tokens, or "" for the CUDA-core path.
std::string tensor_core_kernel(const Kernels &kernels, const Weight &w, int n_tokens, bool swiglu) {
  if (!kernels.tensor_cores() || n_tokens < kTcMinTokens || w.cols % 128 != 0)
    return {};
  std::string name = tensor_core_gemm_name(w.layout.type, swiglu);
  return kernels.has(name) ? name : std::string();
}

LaunchShape tensor_core_shape(int64_t rows, int n_tokens) {
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>((rows + kTcRows - 1) / kTcRows);
  shape.grid_y = static_cast<unsigned>((n_tokens + kTcTokens - 1) / kTcTokens);
  shape.block_x = 128;
  return shape;
}

LaunchShape matmul_shape(int64_t rows, int n_tokens) {
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  shape.grid_y =
      n_tokens == 1 ? 1u : static_cast<unsigned>((n_tokens + kGemmTokens - 1) / kGemmTokens);
  shape.block_x = 32 * kWarpsPerBlock;
  return shape;
}

} // namespace

void launch_matmul(const Device &device, const Kernels &kernels, const Weight &w, CUdeviceptr x,
                   CUdeviceptr out, int n_tokens, bool accumulate) {
  const std::string tc = tensor_core_kernel(kernels, w, n_tokens, false);
  const CUfunction f = kernels.get(
      !tc.empty() ? tc : kernel_name(n_tokens == 1 ? "bonsai_gemv_" : "bonsai_gemm_", w));
  const LaunchShape shape =
      !tc.empty() ? tensor_core_shape(w.rows, n_tokens) : matmul_shape(w.rows, n_tokens);
  launch(device, f, shape, w.data.get(), x, out, static_cast<int>(w.rows), static_cast<int>(w.cols),
         n_tokens, accumulate ? 1 : 0);
}

void launch_swiglu(const Device &device, const Kernels &kernels, const Weight &gate,
                   const Weight &up, CUdeviceptr x, CUdeviceptr out, int n_tokens) {
  const std::string tc = tensor_core_kernel(kernels, gate, n_tokens, true);
  const CUfunction f = kernels.get(
      !tc.empty()
          ? tc
          : kernel_name(n_tokens == 1 ? "bonsai_gemv_swiglu_" : "bonsai_gemm_swiglu_", gate));
  const LaunchShape shape =
      !tc.empty() ? tensor_core_shape(gate.rows, n_tokens) : matmul_shape(gate.rows, n_tokens);
  launch(device, f, shape, gate.data.get(), up.data.get(), x, out, static_cast<int>(gate.rows),
         static_cast<int>(gate.cols), n_tokens);
}

void launch_get_rows(const Device &device, const Kernels &kernels, const Weight &w, CUdeviceptr ids,
                     CUdeviceptr out, int n_tokens) {
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>(n_tokens);
  shape.block_x = 256;
  launch(device, kernels.get(kernel_name("bonsai_get_rows_", w)), shape, w.data.get(), ids, out,
         static_cast<int>(w.cols));
}

} // namespace bonsai::cuda
