#include "launch.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernel_sources.hpp"
#include "plugin_error.hpp"
#include "weight_repack.hpp"

namespace bonsai::cuda {
namespace {

constexpr int kWarpsPerBlock = 4; // rows per block in the matmul kernels
constexpr int kGemmTokens = 8;    // tokens per tile of the bonsai_gemm_* kernels

std::string kernel_name(const char *kind, const Weight &w) {
  return std::string(kind) + kernel_type_suffix(w.layout.type);
}

// Tensor-core tiles (kernels/matmul_tc.cuh): 128 rows x 64 tokens, 8 warps,
// the f16 tiles in dynamic shared memory (TC_SHARED_BYTES there).
constexpr int kTcRows = 128;
constexpr int kTcTokens = 64;
constexpr int kTcThreads = 256;
constexpr int kTcSharedRowBytes = (128 + 8) * 2;
// Below this many tokens the CUDA-core kernels waste less of a tile.
constexpr int kTcMinTokens = 9;

int tensor_core_shared_bytes(bool swiglu) {
  return ((swiglu ? 2 : 1) * kTcRows + kTcTokens) * kTcSharedRowBytes;
}

// The tensor-core kernel for w and n_tokens, or "" for the CUDA-core path
// (also when the device cannot give a block the tiles' shared memory).
std::string tensor_core_kernel(const Kernels &kernels, const Weight &w, int n_tokens, bool swiglu) {
  if (!kernels.tensor_cores() || n_tokens < kTcMinTokens || w.cols % 128 != 0)
    return {};
  std::string name = tensor_core_gemm_name(w.layout.type, swiglu);
  if (!kernels.has(name) || tensor_core_shared_bytes(swiglu) > kernels.dynamic_shared_limit(name))
    return {};
  return name;
}

LaunchShape tensor_core_shape(int64_t rows, int n_tokens, bool swiglu) {
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>((rows + kTcRows - 1) / kTcRows);
  shape.grid_y = static_cast<unsigned>((n_tokens + kTcTokens - 1) / kTcTokens);
  shape.block_x = kTcThreads;
  shape.shared_bytes = static_cast<unsigned>(tensor_core_shared_bytes(swiglu));
  return shape;
}

// Int8 tensor-core tiles (kernels/matmul_mmq.cuh): 128 rows x 64 tokens, 8
// warps, two stages of codes and activation records in dynamic shared
// memory (MMQ_SHARED_BYTES there).
constexpr int kMmqRecordBytes = 144;

int mmq_shared_bytes(const Weight &w, bool swiglu) {
  const int payload = planar_code_bytes(w.layout.type);
  return 2 * ((swiglu ? 2 : 1) * kTcRows * payload + kTcTokens * kMmqRecordBytes);
}

// The int8 tensor-core kernel for w and n_tokens, or "" (no scratch for
// the quantized rows, option off, another type, too few tokens).
std::string mmq_kernel(const Kernels &kernels, const Weight &w, int n_tokens, bool swiglu,
                       CUdeviceptr scratch) {
  if (!kernels.int8_mma() || scratch == 0 || n_tokens < kTcMinTokens || w.cols % 128 != 0)
    return {};
  std::string name = mmq_gemm_name(w.layout.type, swiglu);
  if (!kernels.has(name) || mmq_shared_bytes(w, swiglu) > kernels.dynamic_shared_limit(name))
    return {};
  return name;
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
// quantized input in dynamic shared memory (152 bytes per 128 columns).
constexpr int kDp4aRowsPerBlock = 16;
constexpr int64_t kDp4aSharedPer128 = 152;

// Host images of the kernels' by-value parameter structs.
struct Dp4aTargetsArg {
  CUdeviceptr w[kMaxGroupWeights];
  CUdeviceptr out[kMaxGroupWeights];
  int32_t rows[kMaxGroupWeights];
  int32_t first_block[kMaxGroupWeights + 1];
  int32_t n;
};
static_assert(sizeof(Dp4aTargetsArg) == 80, "must match Dp4aTargets in gemv_dp4a.cuh");
struct Dp4aInputArg {
  CUdeviceptr x;
  CUdeviceptr norm;
  float eps;
  int32_t cols;
  CUdeviceptr staged;
};
static_assert(sizeof(Dp4aInputArg) == 32, "must match Dp4aInput in gemv_dp4a.cuh");

// The int8 kernel for weights of w's type and shape and n_tokens tokens, or
// "" (also when its input does not fit the shared memory a block can have).
std::string dp4a_kernel(const Kernels &kernels, const Weight &w, int n_tokens, bool swiglu) {
  if (!kernels.int8_gemv() || w.cols % 128 != 0 || n_tokens < 1 || n_tokens > kMaxInt8GemvTokens)
    return {};
  std::string name = dp4a_gemv_name(w.layout.type, swiglu);
  if (!kernels.has(name) || w.cols / 128 * kDp4aSharedPer128 > kernels.dynamic_shared_limit(name))
    return {};
  return name;
}

} // namespace

int64_t int8_staging_bytes(int64_t cols) {
  return (cols / 128 * kDp4aSharedPer128 + 15) / 16 * 16; // Q8_ROW_STRIDE
}

namespace {

unsigned dp4a_blocks(int64_t rows) {
  return static_cast<unsigned>((rows + kDp4aRowsPerBlock - 1) / kDp4aRowsPerBlock);
}

LaunchShape dp4a_shape(unsigned blocks, int64_t cols, int n_tokens) {
  LaunchShape shape;
  shape.grid_x = blocks;
  shape.grid_y = static_cast<unsigned>(n_tokens);
  shape.block_x = 256;
  shape.shared_bytes = static_cast<unsigned>(cols / 128 * kDp4aSharedPer128);
  return shape;
}

// The GEMV's input argument; with a staging buffer, first the launch that
// quantizes the rows into it (one block of 8 warps per token).
Dp4aInputArg stage_input(const Device &device, const Kernels &kernels, const NormedInput &in,
                         int64_t cols) {
  Dp4aInputArg arg{in.x, in.norm, in.eps, static_cast<int32_t>(cols), 0};
  if (in.staging == 0)
    return arg;
  LaunchShape block_per_token;
  block_per_token.grid_x = static_cast<unsigned>(in.n_tokens);
  block_per_token.block_x = 256;
  launch(device, kernels.get("bonsai_quantize_input"), block_per_token, arg, in.staging);
  arg.staged = in.staging;
  return arg;
}

// The fastest of int8 tensor cores, f16 tensor cores and CUDA-core tiles
// for n_tokens; `int8` says the kernel reads the rows quantized first.
struct MatmulChoice {
  std::string name;
  LaunchShape shape;
  bool int8 = false;
  bool tensor_cores = false;
};

MatmulChoice choose_matmul(const Kernels &kernels, const Weight &w, const MatmulRows &rows,
                           bool swiglu) {
  const int n_tokens = rows.n_tokens;
  if (std::string mmq = mmq_kernel(kernels, w, n_tokens, swiglu, rows.int8_scratch); !mmq.empty()) {
    LaunchShape shape = tensor_core_shape(w.rows, n_tokens, swiglu);
    shape.shared_bytes = static_cast<unsigned>(mmq_shared_bytes(w, swiglu));
    return {mmq, shape, true, true};
  }
  if (std::string tc = tensor_core_kernel(kernels, w, n_tokens, swiglu); !tc.empty())
    return {tc, tensor_core_shape(w.rows, n_tokens, swiglu), false, true};
  const char *kind = n_tokens == 1 ? (swiglu ? "bonsai_gemv_swiglu_" : "bonsai_gemv_")
                                   : (swiglu ? "bonsai_gemm_swiglu_" : "bonsai_gemm_");
  return {kernel_name(kind, w), matmul_shape(w.rows, n_tokens)};
}

// What the chosen kernel reads: x, or for an int8 kernel x quantized into
// the rows' int8 scratch first (one block per row).
CUdeviceptr matmul_input(const Device &device, const Kernels &kernels, const MatmulChoice &choice,
                         const MatmulRows &rows, int64_t cols) {
  if (!choice.int8)
    return rows.x;
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>(rows.n_tokens);
  shape.block_x = 256;
  launch(device, kernels.get("bonsai_quantize_rows"), shape, rows.x, static_cast<int>(cols),
         rows.n_tokens, rows.int8_scratch);
  return rows.int8_scratch;
}

} // namespace

bool launch_int8_group(const Device &device, const Kernels &kernels, const MatmulGroup &group,
                       const NormedInput &in, bool accumulate) {
  if (group.n < 1 || group.n > kMaxGroupWeights)
    return false;
  const Weight &first = *group.weights[0];
  const std::string name = dp4a_kernel(kernels, first, in.n_tokens, false);
  if (name.empty())
    return false;
  Dp4aTargetsArg targets{};
  targets.n = group.n;
  unsigned blocks = 0;
  for (int m = 0; m < group.n; ++m) {
    const Weight &w = *group.weights[m];
    if (w.layout.type != first.layout.type || w.cols != first.cols)
      return false;
    targets.w[m] = w.data.get();
    targets.out[m] = group.outs[m];
    targets.rows[m] = static_cast<int32_t>(w.rows);
    targets.first_block[m] = static_cast<int32_t>(blocks);
    blocks += dp4a_blocks(w.rows);
  }
  targets.first_block[group.n] = static_cast<int32_t>(blocks);
  const Dp4aInputArg input = stage_input(device, kernels, in, first.cols);
  launch(device, kernels.get(name), dp4a_shape(blocks, first.cols, in.n_tokens), targets, input,
         accumulate ? 1 : 0);
  return true;
}

bool launch_int8_swiglu(const Device &device, const Kernels &kernels, const Weight &gate,
                        const Weight &up, const NormedInput &in, CUdeviceptr out) {
  const std::string name = dp4a_kernel(kernels, gate, in.n_tokens, true);
  if (name.empty() || up.layout.type != gate.layout.type)
    return false;
  const Dp4aInputArg input = stage_input(device, kernels, in, gate.cols);
  launch(device, kernels.get(name), dp4a_shape(dp4a_blocks(gate.rows), gate.cols, in.n_tokens),
         gate.data.get(), up.data.get(), input, out, static_cast<int>(gate.rows));
  return true;
}

MatmulGroup single_matmul(const Weight &w, CUdeviceptr out) {
  MatmulGroup single;
  single.weights[0] = &w;
  single.outs[0] = out;
  single.n = 1;
  return single;
}

namespace {

// Rows [first, first + n) of `rows`, for a matmul of `cols` inputs and
// `out_width` outputs per token.
NormedInput token_chunk(const MatmulRows &rows, int first, int n, int64_t cols) {
  return {rows.x + static_cast<CUdeviceptr>(first) * cols * sizeof(float), 0, 0.0f,
          rows.int8_scratch, n};
}
CUdeviceptr out_chunk(const MatmulRows &rows, int first, int64_t out_width) {
  return rows.out + static_cast<CUdeviceptr>(first) * out_width * sizeof(float);
}

// A step of more tokens than one int8 GEMV launch takes, where no
// tensor-core GEMM runs (tensor_cores=off, a device without them): the int8
// GEMV kMaxInt8GemvTokens tokens at a time. The CUDA-core GEMM it replaces
// decodes every weight in f32 and prefilled 8B Q1_0 at 47 t/s on an H100,
// against 370 t/s for one token at a time on the GEMV. The first chunk
// decides: false (nothing launched) where the int8 GEMV does not apply.
template <class LaunchChunk>
bool launch_int8_in_chunks(const MatmulRows &rows, const LaunchChunk &launch_chunk) {
  if (rows.n_tokens < 1 || !launch_chunk(0, std::min(kMaxInt8GemvTokens, rows.n_tokens)))
    return false;
  // The later chunks differ only in their token count (1..8), which the
  // GEMV takes: a refusal here would leave the earlier chunks' outputs (and
  // residual additions) half done, so it is an error, not a fallback.
  for (int first = kMaxInt8GemvTokens; first < rows.n_tokens; first += kMaxInt8GemvTokens)
    if (!launch_chunk(first, std::min(kMaxInt8GemvTokens, rows.n_tokens - first)))
      fail_state("int8 GEMV refused a later chunk of a step it accepted");
  return true;
}

} // namespace

void launch_matmul(const Device &device, const Kernels &kernels, const Weight &w,
                   const MatmulRows &rows, bool accumulate) {
  if (launch_int8_group(device, kernels, single_matmul(w, rows.out),
                        {rows.x, 0, 0.0f, rows.int8_scratch, rows.n_tokens}, accumulate))
    return;
  const MatmulChoice choice = choose_matmul(kernels, w, rows, false);
  if (!choice.tensor_cores && launch_int8_in_chunks(rows, [&](int first, int n) {
        return launch_int8_group(device, kernels, single_matmul(w, out_chunk(rows, first, w.rows)),
                                 token_chunk(rows, first, n, w.cols), accumulate);
      }))
    return;
  const CUdeviceptr input = matmul_input(device, kernels, choice, rows, w.cols);
  launch(device, kernels.get(choice.name), choice.shape, w.data.get(), input, rows.out,
         static_cast<int>(w.rows), static_cast<int>(w.cols), rows.n_tokens, accumulate ? 1 : 0);
}

void launch_swiglu(const Device &device, const Kernels &kernels, const Weight &gate,
                   const Weight &up, const MatmulRows &rows) {
  if (launch_int8_swiglu(device, kernels, gate, up,
                         {rows.x, 0, 0.0f, rows.int8_scratch, rows.n_tokens}, rows.out))
    return;
  const MatmulChoice choice = choose_matmul(kernels, gate, rows, true);
  if (!choice.tensor_cores && launch_int8_in_chunks(rows, [&](int first, int n) {
        return launch_int8_swiglu(device, kernels, gate, up, token_chunk(rows, first, n, gate.cols),
                                  out_chunk(rows, first, gate.rows));
      }))
    return;
  const CUdeviceptr input = matmul_input(device, kernels, choice, rows, gate.cols);
  launch(device, kernels.get(choice.name), choice.shape, gate.data.get(), up.data.get(), input,
         rows.out, static_cast<int>(gate.rows), static_cast<int>(gate.cols), rows.n_tokens);
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
