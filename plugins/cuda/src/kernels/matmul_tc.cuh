// Prefill GEMM on tensor cores (compute capability 7.0 and newer) for the
// 128-value block types Q1_0 and Q2_0: out[t][row] = W[row] . x[t].
//
// A block of 4 warps computes 64 rows x 32 tokens. For each 128-column chunk
// the weights are decoded to f16 in shared memory (exact: every Q1_0/Q2_0
// weight is 0 or +-d with d an f16) and the activations rounded to f16; each
// warp then multiplies its 16 rows by the 32 tokens with 16x16x16 MMAs that
// accumulate in f32. The results go through shared memory so that the global
// writes are coalesced and rows/tokens past the end are skipped.
//
// The fragments use PTX `wmma` instructions directly: the WMMA C++ header
// (mma.h) ships with the CUDA toolkit, not with NVRTC. Their register layout
// is opaque and the kernels never look inside them, so the CPU emulator
// (tests/cuda) supplies whole-tile versions of the five helpers below.
#ifndef BONSAI_KERNEL_EMULATION
struct FragAB { // a 16x16 f16 operand: 8 x f16x2
  u32 r[8];
};
struct FragC { // a 16x16 f32 accumulator
  float r[8];
};
__device__ __forceinline__ void frag_zero(FragC &c) {
  for (int i = 0; i < 8; ++i)
    c.r[i] = 0.0f;
}
// A: 16x16, row-major, `ldm` halves between rows; 32-byte aligned.
__device__ __forceinline__ void wmma_load_a_row(FragAB &a, const u16 *p, int ldm) {
  asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
               : "=r"(a.r[0]), "=r"(a.r[1]), "=r"(a.r[2]), "=r"(a.r[3]), "=r"(a.r[4]), "=r"(a.r[5]),
                 "=r"(a.r[6]), "=r"(a.r[7])
               : "l"(p), "r"(ldm));
}
// B: 16x16 (k x n), column-major: element (k, n) at p[n * ldm + k].
__device__ __forceinline__ void wmma_load_b_col(FragAB &b, const u16 *p, int ldm) {
  asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;"
               : "=r"(b.r[0]), "=r"(b.r[1]), "=r"(b.r[2]), "=r"(b.r[3]), "=r"(b.r[4]), "=r"(b.r[5]),
                 "=r"(b.r[6]), "=r"(b.r[7])
               : "l"(p), "r"(ldm));
}
// d += a * b.
__device__ __forceinline__ void wmma_mma(FragC &d, const FragAB &a, const FragAB &b) {
  asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 "
               "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11,%12,%13,%14,%15}, "
               "{%16,%17,%18,%19,%20,%21,%22,%23}, {%0,%1,%2,%3,%4,%5,%6,%7};"
               : "+f"(d.r[0]), "+f"(d.r[1]), "+f"(d.r[2]), "+f"(d.r[3]), "+f"(d.r[4]), "+f"(d.r[5]),
                 "+f"(d.r[6]), "+f"(d.r[7])
               : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(a.r[4]), "r"(a.r[5]),
                 "r"(a.r[6]), "r"(a.r[7]), "r"(b.r[0]), "r"(b.r[1]), "r"(b.r[2]), "r"(b.r[3]),
                 "r"(b.r[4]), "r"(b.r[5]), "r"(b.r[6]), "r"(b.r[7]));
}
// The accumulator to memory, column-major: element (m, n) at p[n * ldm + m].
__device__ __forceinline__ void wmma_store_col(float *p, const FragC &c, int ldm) {
  asm volatile("wmma.store.d.sync.aligned.col.m16n16k16.f32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8}, %9;"
               :
               : "l"(p), "f"(c.r[0]), "f"(c.r[1]), "f"(c.r[2]), "f"(c.r[3]), "f"(c.r[4]),
                 "f"(c.r[5]), "f"(c.r[6]), "f"(c.r[7]), "r"(ldm)
               : "memory");
}
__device__ __forceinline__ u16 float_to_half(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif

#define TC_WARPS 4
#define TC_ROWS (16 * TC_WARPS) // rows per block, 16 per warp
#define TC_TOKENS 32            // tokens per block, two 16-token halves
#define TC_K 128                // columns per chunk: one weight block
#define TC_LD (TC_K + 8)        // halves per shared row: 16-byte multiple, staggers banks
#define TC_LDC (TC_ROWS + 4)    // floats per token row of the staging tile
#define TC_TILE_A (TC_ROWS * TC_LD)

// N_MATS = 1: out = W x (+ out when accumulate). N_MATS = 2: the MLP's gate
// and up matrices, out = silu(Wg x) * (Wu x).
template <class T, int N_MATS>
__device__ void tc_gemm(const u8 *w0, const u8 *w1, const float *x, float *out, int rows, int cols,
                        int n_tokens, int accumulate) {
  // N_MATS weight tiles, then the activation tile. The staging tiles of the
  // epilogue (N_MATS x 32 x TC_LDC floats) reuse the weight tiles.
  alignas(32) __shared__ u16 smem[N_MATS * TC_TILE_A + TC_TOKENS * TC_LD];
  u16 *const a_tile = smem;
  u16 *const b_tile = smem + N_MATS * TC_TILE_A;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int r0 = blockIdx.x * TC_ROWS;
  const int t0 = blockIdx.y * TC_TOKENS;
  const int n_blocks = cols / T::QK;

  FragC acc[N_MATS][2];
  for (int m = 0; m < N_MATS; ++m)
    for (int h = 0; h < 2; ++h)
      frag_zero(acc[m][h]);

  for (int c0 = 0; c0 < cols; c0 += TC_K) {
    // Weights: thread tid decodes half (tid % 2) of row tid / 2's block.
    {
      const int row = tid / 2, first = (tid % 2) * (TC_K / 2);
      for (int m = 0; m < N_MATS; ++m) {
        u16 *dst = a_tile + m * TC_TILE_A + row * TC_LD + first;
        if (r0 + row < rows) {
          const typename T::Block block =
              T::block(m == 0 ? w0 : w1, rows, n_blocks, r0 + row, c0 / T::QK);
          for (int j = 0; j < TC_K / 2; ++j)
            dst[j] = float_to_half(T::value(block, first + j));
        } else {
          for (int j = 0; j < TC_K / 2; ++j)
            dst[j] = 0;
        }
      }
    }
    // Activations: thread tid rounds 32 values of token tid / 4.
    {
      const int token = tid / 4, first = (tid % 4) * (TC_K / 4);
      u16 *dst = b_tile + token * TC_LD + first;
      if (t0 + token < n_tokens) {
        const float *src = x + (size_t)(t0 + token) * cols + c0 + first;
        for (int j = 0; j < TC_K / 4; ++j)
          dst[j] = float_to_half(src[j]);
      } else {
        for (int j = 0; j < TC_K / 4; ++j)
          dst[j] = 0;
      }
    }
    __syncthreads();
    for (int k = 0; k < TC_K; k += 16) {
      FragAB b[2];
      for (int h = 0; h < 2; ++h)
        wmma_load_b_col(b[h], b_tile + h * 16 * TC_LD + k, TC_LD);
      for (int m = 0; m < N_MATS; ++m) {
        FragAB a;
        wmma_load_a_row(a, a_tile + m * TC_TILE_A + warp * 16 * TC_LD + k, TC_LD);
        for (int h = 0; h < 2; ++h)
          wmma_mma(acc[m][h], a, b[h]);
      }
    }
    __syncthreads(); // the tiles are rewritten by the next chunk
  }

  // Epilogue: accumulators -> staging[token][row] -> out, coalesced by row.
  float *const staging = (float *)smem;
  for (int m = 0; m < N_MATS; ++m)
    for (int h = 0; h < 2; ++h)
      wmma_store_col(staging + m * TC_TOKENS * TC_LDC + h * 16 * TC_LDC + warp * 16, acc[m][h],
                     TC_LDC);
  __syncthreads();
  for (int i = tid; i < TC_TOKENS * TC_ROWS; i += TC_WARPS * 32) {
    const int token = i / TC_ROWS, row = i % TC_ROWS;
    if (t0 + token >= n_tokens || r0 + row >= rows)
      continue;
    float *y = out + (size_t)(t0 + token) * rows + r0 + row;
    const float v = staging[token * TC_LDC + row];
    if (N_MATS == 2) {
      const float u = staging[TC_TOKENS * TC_LDC + token * TC_LDC + row];
      *y = v / (1.0f + expf(-v)) * u;
    } else {
      *y = accumulate ? *y + v : v;
    }
  }
}

#define BONSAI_TC_KERNELS(suffix, Type)                                                            \
  extern "C" __global__ void bonsai_gemm_tc_##suffix(                                              \
      const u8 *w, const float *x, float *out, int rows, int cols, int n_tokens, int accumulate) { \
    tc_gemm<Type, 1>(w, w, x, out, rows, cols, n_tokens, accumulate);                              \
  }                                                                                                \
  extern "C" __global__ void bonsai_gemm_swiglu_tc_##suffix(                                       \
      const u8 *wg, const u8 *wu, const float *x, float *out, int rows, int cols, int n_tokens) {  \
    tc_gemm<Type, 2>(wg, wu, x, out, rows, cols, n_tokens, 0);                                     \
  }

BONSAI_TC_KERNELS(q1_0, TypeQ1_0)
BONSAI_TC_KERNELS(q2_0, TypeQ2_0)
