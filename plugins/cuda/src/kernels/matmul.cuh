// GEMV/GEMM over quantized rows, the SwiGLU-fused variant and the embedding
// row lookup, one extern "C" kernel per weight type.
// One warp per output row; lanes stride over the row's blocks, so lane k
// reads block k, k+32, ... and each weight is decoded once for all TOK
// tokens of the tile (blockIdx.y selects the tile). Block = 4 warps.
// out[t][row] = dot(W[row], x[t]) (+ out[t][row] when accumulate != 0:
// residual added in place, each element is written by exactly one lane).
template <class T, int TOK>
__device__ void matmul_tile(const u8 *w, const float *x, float *out, int rows, int cols,
                            int n_tokens, int accumulate) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int t0 = blockIdx.y * TOK;
  if (row >= rows || t0 >= n_tokens)
    return;
  const int n_valid = min(TOK, n_tokens - t0);
  const int n_blocks = cols / T::QK;
  float acc[TOK];
  for (int t = 0; t < TOK; ++t)
    acc[t] = 0.0f;
  for (int b = lane; b < n_blocks; b += 32) {
    const typename T::Block block = T::block(w, rows, n_blocks, row, b);
    const float *xb = x + (size_t)t0 * cols + (size_t)b * T::QK;
    for (int j = 0; j < T::QK; ++j) {
      const float wj = T::value(block, j);
      for (int t = 0; t < TOK; ++t)
        if (t < n_valid)
          acc[t] += wj * xb[(size_t)t * cols + j];
    }
  }
  for (int t = 0; t < TOK; ++t) {
    const float sum = warp_sum(acc[t]);
    if (lane == 0 && t < n_valid) {
      float *y = out + (size_t)(t0 + t) * rows + row;
      *y = accumulate ? *y + sum : sum;
    }
  }
}

// out[t][row] = silu(Wg[row] . x[t]) * (Wu[row] . x[t]): the MLP's gate and
// up projections with the SwiGLU product as epilogue.
template <class T, int TOK>
__device__ void swiglu_tile(const u8 *wg, const u8 *wu, const float *x, float *out, int rows,
                            int cols, int n_tokens) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int t0 = blockIdx.y * TOK;
  if (row >= rows || t0 >= n_tokens)
    return;
  const int n_valid = min(TOK, n_tokens - t0);
  const int n_blocks = cols / T::QK;
  float g[TOK], u[TOK];
  for (int t = 0; t < TOK; ++t)
    g[t] = u[t] = 0.0f;
  for (int b = lane; b < n_blocks; b += 32) {
    const typename T::Block gb = T::block(wg, rows, n_blocks, row, b);
    const typename T::Block ub = T::block(wu, rows, n_blocks, row, b);
    const float *xb = x + (size_t)t0 * cols + (size_t)b * T::QK;
    for (int j = 0; j < T::QK; ++j) {
      const float gj = T::value(gb, j), uj = T::value(ub, j);
      for (int t = 0; t < TOK; ++t)
        if (t < n_valid) {
          const float xv = xb[(size_t)t * cols + j];
          g[t] += gj * xv;
          u[t] += uj * xv;
        }
    }
  }
  for (int t = 0; t < TOK; ++t) {
    const float gs = warp_sum(g[t]);
    const float us = warp_sum(u[t]);
    if (lane == 0 && t < n_valid)
      out[(size_t)(t0 + t) * rows + row] = gs / (1.0f + expf(-gs)) * us;
  }
}

// out[t][c] = W[ids[t]][c] for the step's tokens (embedding lookup) from a
// rows x cols matrix.
template <class T>
__device__ void get_rows(const u8 *w, const int *ids, float *out, int rows, int cols) {
  const int t = blockIdx.x;
  const int n_blocks = cols / T::QK;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[(size_t)t * cols + c] = T::value(T::block(w, rows, n_blocks, ids[t], c / T::QK), c % T::QK);
}

#define BONSAI_MATMUL_KERNELS(suffix, Type)                                                        \
  extern "C" __global__ void bonsai_gemv_##suffix(                                                 \
      const u8 *w, const float *x, float *out, int rows, int cols, int n_tokens, int accumulate) { \
    grid_entry();                                                                                  \
    matmul_tile<Type, 1>(w, x, out, rows, cols, n_tokens, accumulate);                             \
  }                                                                                                \
  extern "C" __global__ void bonsai_gemm_##suffix(                                                 \
      const u8 *w, const float *x, float *out, int rows, int cols, int n_tokens, int accumulate) { \
    grid_entry();                                                                                  \
    matmul_tile<Type, 8>(w, x, out, rows, cols, n_tokens, accumulate);                             \
  }                                                                                                \
  extern "C" __global__ void bonsai_gemv_swiglu_##suffix(                                          \
      const u8 *wg, const u8 *wu, const float *x, float *out, int rows, int cols, int n_tokens) {  \
    grid_entry();                                                                                  \
    swiglu_tile<Type, 1>(wg, wu, x, out, rows, cols, n_tokens);                                    \
  }                                                                                                \
  extern "C" __global__ void bonsai_gemm_swiglu_##suffix(                                          \
      const u8 *wg, const u8 *wu, const float *x, float *out, int rows, int cols, int n_tokens) {  \
    grid_entry();                                                                                  \
    swiglu_tile<Type, 8>(wg, wu, x, out, rows, cols, n_tokens);                                    \
  }                                                                                                \
  extern "C" __global__ void bonsai_get_rows_##suffix(const u8 *w, const int *ids, float *out,     \
                                                      int rows, int cols) {                        \
    grid_entry();                                                                                  \
    get_rows<Type>(w, ids, out, rows, cols);                                                       \
  }

BONSAI_MATMUL_KERNELS(f32, TypeF32)
BONSAI_MATMUL_KERNELS(f16, TypeF16)
BONSAI_MATMUL_KERNELS(bf16, TypeBF16)
BONSAI_MATMUL_KERNELS(q8_0, TypeQ8_0)
BONSAI_MATMUL_KERNELS(q1_0, TypeQ1_0)
BONSAI_MATMUL_KERNELS(q2_0, TypeQ2_0)
