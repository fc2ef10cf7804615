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

// The int8 GEMVs (kernels/gemv_dp4a.cuh): 8 warps of 2 rows per block, the
// quantized activations in dynamic shared memory (152 bytes per 128 columns).
constexpr int kDp4aRowsPerBlock = 16;
constexpr int64_t kDp4aSharedPerBlock = 152;
constexpr int64_t kMaxDynamicShared = 48 * 1024; // without the opt-in attribute

std::string dp4a_kernel(const Kernels &kernels, const Weight &w, int n_tokens, bool swiglu) {
  if (!kernels.int8_gemv() || n_tokens != 1 || w.cols % 128 != 0 ||
      w.cols / 128 * kDp4aSharedPerBlock > kMaxDynamicShared)
    return {};
  std::string name = dp4a_gemv_name(w.layout.type, swiglu);
  return kernels.has(name) ? name : std::string();
}

LaunchShape dp4a_shape(int64_t rows, int64_t cols) {
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>((rows + kDp4aRowsPerBlock - 1) / kDp4aRowsPerBlock);
  shape.block_x = 256;
  shape.shared_bytes = static_cast<unsigned>(cols / 128 * kDp4aSharedPerBlock);
  return shape;
}

// The fastest kernel that applies: int8 GEMV, tensor cores, CUDA-core tiles.
struct MatmulChoice {
  std::string name;
  LaunchShape shape;
};

MatmulChoice choose_matmul(const Kernels &kernels, const Weight &w, int n_tokens, bool swiglu) {
  if (std::string dp4a = dp4a_kernel(kernels, w, n_tokens, swiglu); !dp4a.empty())
    return {dp4a, dp4a_shape(w.rows, w.cols)};
  if (std::string tc = tensor_core_kernel(kernels, w, n_tokens, swiglu); !tc.empty())
    return {tc, tensor_core_shape(w.rows, n_tokens)};
  const char *kind = n_tokens == 1 ? (swiglu ? "bonsai_gemv_swiglu_" : "bonsai_gemv_")
                                   : (swiglu ? "bonsai_gemm_swiglu_" : "bonsai_gemm_");
  return {kernel_name(kind, w), matmul_shape(w.rows, n_tokens)};
}

} // namespace

void launch_matmul(const Device &device, const Kernels &kernels, const Weight &w, CUdeviceptr x,
                   CUdeviceptr out, int n_tokens, bool accumulate) {
  const MatmulChoice choice = choose_matmul(kernels, w, n_tokens, false);
  launch(device, kernels.get(choice.name), choice.shape, w.data.get(), x, out,
         static_cast<int>(w.rows), static_cast<int>(w.cols), n_tokens, accumulate ? 1 : 0);
}

void launch_swiglu(const Device &device, const Kernels &kernels, const Weight &gate,
                   const Weight &up, CUdeviceptr x, CUdeviceptr out, int n_tokens) {
  const MatmulChoice choice = choose_matmul(kernels, gate, n_tokens, true);
  launch(device, kernels.get(choice.name), choice.shape, gate.data.get(), up.data.get(), x, out,
         static_cast<int>(gate.rows), static_cast<int>(gate.cols), n_tokens);
}

void launch_get_rows(const Device &device, const Kernels &kernels, const Weight &w, CUdeviceptr ids,
                     CUdeviceptr out, int n_tokens) {
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>(n_tokens);
  shape.block_x = 256;
  launch(device, kernels.get(kernel_name("bonsai_get_rows_", w)), shape, w.data.get(), ids, out,
         static_cast<int>(w.rows), static_cast<int>(w.cols));
}

} // namespace bonsai::cuda
