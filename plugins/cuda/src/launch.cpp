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
  const CUfunction f = kernels.get(kernel_name(n_tokens == 1 ? "bonsai_gemv_" : "bonsai_gemm_", w));
  launch(device, f, matmul_shape(w.rows, n_tokens), w.data.get(), x, out, static_cast<int>(w.rows),
         static_cast<int>(w.cols), n_tokens, accumulate ? 1 : 0);
}

void launch_swiglu(const Device &device, const Kernels &kernels, const Weight &gate,
                   const Weight &up, CUdeviceptr x, CUdeviceptr out, int n_tokens) {
  const CUfunction f =
      kernels.get(kernel_name(n_tokens == 1 ? "bonsai_gemv_swiglu_" : "bonsai_gemm_swiglu_", gate));
  launch(device, f, matmul_shape(gate.rows, n_tokens), gate.data.get(), up.data.get(), x, out,
         static_cast<int>(gate.rows), static_cast<int>(gate.cols), n_tokens);
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
