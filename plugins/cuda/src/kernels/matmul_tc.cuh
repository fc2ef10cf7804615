// Prefill GEMM on tensor cores (compute capability 7.0 and newer) for the
// 128-value block types Q1_0 and Q2_0: out[t][row] = W[row] . x[t].
//
// A block of 8 warps computes 128 rows x 64 tokens. For each 128-column
// chunk the weights are decoded to f16 in shared memory (exact: every
// Q1_0/Q2_0 weight is 0 or +-d with d an f16, or 2d) and the activations
// rounded to f16; each warp then multiplies its 32 rows by its 32 tokens
// with 16x16x16 MMAs that accumulate in f32. The results go through shared
// memory so that the global writes are coalesced and rows/tokens past the
// end are skipped.
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
#endif

#define TC_WARPS 8
#define TC_THREADS (32 * TC_WARPS)
#define TC_ROWS 128      // rows per block: 4 row groups of 32
#define TC_TOKENS 64     // tokens per block: 2 token groups of 32
#define TC_K 128         // columns per chunk: one weight block
#define TC_LD (TC_K + 8) // halves per shared row: 16-byte multiple, staggers banks
#define TC_TILE_A (TC_ROWS * TC_LD)
// Dynamic shared memory of a launch: N_MATS weight tiles, then the
// activation tile (52 KB for one matrix, 85 KB for two: past the default 48
// KB, so the host opts in, see plugins/cuda/src/kernels.cpp).
#define TC_SHARED_BYTES(n_mats) (((n_mats)*TC_ROWS + TC_TOKENS) * TC_LD * 2)

struct alignas(8) U32x2 {
  u32 x, y;
};
// 32-byte units, so that the dynamic tile starts where wmma loads may point.
struct alignas(32) TcSharedUnit {
  u32 v[8];
};

// N pairs of f16 values to dst (16-byte aligned) in 16-byte stores.
template <int N> __device__ __forceinline__ void tc_store_pairs(u16 *dst, const u32 (&pairs)[N]) {
  for (int j = 0; j < N / 4; ++j) {
    U32x4 v = {pairs[4 * j], pairs[4 * j + 1], pairs[4 * j + 2], pairs[4 * j + 3]};
    *(U32x4 *)(dst + 8 * j) = v;
  }
}
// tc_decode_half: weights 64 h .. 64 h + 63 (h = 0 or 1) of one planar block
// as f16 into dst (16-byte aligned). Every value is exact: +-d, or (code - 1)
// * d rounded as cvt.rn would round it (what the float path of T::value
// gives).
//
// Q1_0: word k holds weights 32 k + 4 i + b at byte b, bit i. A clear bit
// is -d: the f16 d with its sign bit flipped.
__device__ __forceinline__ void tc_decode_half(TypeQ1_0, const TypeQ1_0::Block &block, int h,
                                               u16 *dst) {
  const U32x4 codes = load_weight_u32x4(block.codes);
  const u32 d = float_to_half(block.d);
  const u32 d2 = d | (d << 16);
  for (int wi = 0; wi < 2; ++wi) {
    const u32 word = h == 0 ? (wi == 0 ? codes.x : codes.y) : (wi == 0 ? codes.z : codes.w);
    const u32 clear = ~word;
    u32 pairs[16];
    for (int i = 0; i < 8; ++i) {
      const u32 m = (clear >> i) & 0x01010101u; // weights 4i .. 4i+3 at bits 0, 8, 16, 24
      pairs[2 * i] = d2 ^ ((m & 0x1u) << 15) ^ ((m & 0x100u) << 23);
      pairs[2 * i + 1] = d2 ^ ((m & 0x10000u) >> 1) ^ ((m & 0x1000000u) << 7);
    }
    tc_store_pairs(dst + 32 * wi, pairs);
  }
}
// Q2_0: word k holds weights 16 k + 4 i + b at byte b, bits 2i and 2i+1.
__device__ __forceinline__ void tc_decode_half(TypeQ2_0, const TypeQ2_0::Block &block, int h,
                                               u16 *dst) {
  const U32x4 codes = load_weight_u32x4(block.codes + 16 * h);
  // The four possible values, two per word: code c is half c % 2 of word c / 2.
  const u32 lo = (u32)float_to_half(-block.d) | ((u32)float_to_half(0.0f * block.d) << 16);
  const u32 hi = (u32)float_to_half(block.d) | ((u32)float_to_half(2.0f * block.d) << 16);
  for (int wi = 0; wi < 4; ++wi) {
    const u32 word = wi == 0 ? codes.x : wi == 1 ? codes.y : wi == 2 ? codes.z : codes.w;
    u32 halves[4][4]; // [i][b]
    for (int i = 0; i < 4; ++i)
      for (int b = 0; b < 4; ++b) {
        const u32 c = (word >> (8 * b + 2 * i)) & 3u;
        halves[i][b] = ((c & 2u) ? hi : lo) >> ((c & 1u) * 16) & 0xffffu;
      }
    u32 pairs[8];
    for (int i = 0; i < 4; ++i) {
      pairs[2 * i] = halves[i][0] | (halves[i][1] << 16);
      pairs[2 * i + 1] = halves[i][2] | (halves[i][3] << 16);
    }
    tc_store_pairs(dst + 16 * wi, pairs);
  }
}

struct TcOutput {
  float *out;
  int rows, n_tokens, accumulate;
};
// One 16x16 output tile (per matrix) -> staging[token][row] -> out: 16
// consecutive rows per token, rows and tokens past the end skipped.
template <int N_MATS>
__device__ __forceinline__ void tc_write_tile(const FragC (&tile)[N_MATS], float *staging,
                                              const TcOutput &o, int row_base, int token_base) {
  for (int m = 0; m < N_MATS; ++m)
    wmma_store_col(staging + m * 256, tile[m], 16);
  __syncwarp();
  for (int e = threadIdx.x % 32; e < 256; e += 32) {
    const int token = token_base + e / 16, row = row_base + e % 16;
    if (token >= o.n_tokens || row >= o.rows)
      continue;
    float *y = o.out + (size_t)token * o.rows + row;
    const float v = staging[e];
    if (N_MATS == 2) {
      const float u = staging[256 + e];
      *y = v / (1.0f + expf(-v)) * u;
    } else {
      *y = o.accumulate ? *y + v : v;
    }
  }
  __syncwarp(); // staging is rewritten by the next tile
}

// N_MATS = 1: out = W x (+ out when accumulate). N_MATS = 2: the MLP's gate
// and up matrices, out = silu(Wg x) * (Wu x).
//
// A block of 8 warps computes 128 rows x 64 tokens; warp w owns rows
// 32 (w % 4) .. +31 and tokens 32 (w / 4) .. +31, four 16x16 accumulators
// per matrix. Per 128-column chunk, thread t decodes half a weight block of
// row t / 2 (vector loads and stores, no per-weight memory access) and each
// warp rounds 8 tokens' activations to f16 with coalesced 16-byte loads.
template <class T, int N_MATS>
__device__ void tc_gemm(const u8 *w0, const u8 *w1, const float *x, float *out, int rows, int cols,
                        int n_tokens, int accumulate) {
  BONSAI_DYNAMIC_SHARED(TcSharedUnit, tc_shared);
  u16 *const a_tile = (u16 *)tc_shared;
  u16 *const b_tile = a_tile + N_MATS * TC_TILE_A;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int row_group = warp % 4, token_group = warp / 4;
  const int r0 = blockIdx.x * TC_ROWS;
  const int t0 = blockIdx.y * TC_TOKENS;
  const int n_blocks = cols / T::QK;

  FragC acc[2][2][N_MATS]; // [row half][token half][matrix]
  for (int m = 0; m < N_MATS; ++m)
    for (int i = 0; i < 2; ++i)
      for (int h = 0; h < 2; ++h)
        frag_zero(acc[i][h][m]);

  for (int c0 = 0; c0 < cols; c0 += TC_K) {
    {
      const int row = tid / 2, half = tid % 2;
      for (int m = 0; m < N_MATS; ++m) {
        u16 *dst = a_tile + m * TC_TILE_A + row * TC_LD + 64 * half;
        if (r0 + row < rows) {
          tc_decode_half(T(), T::block(m == 0 ? w0 : w1, rows, n_blocks, r0 + row, c0 / T::QK),
                         half, dst);
        } else {
          const U32x4 zero = {0, 0, 0, 0};
          for (int j = 0; j < 8; ++j)
            *(U32x4 *)(dst + 8 * j) = zero;
        }
      }
    }
    for (int j = 0; j < TC_TOKENS / TC_WARPS; ++j) {
      const int token = warp * (TC_TOKENS / TC_WARPS) + j;
      U32x2 packed = {0, 0};
      if (t0 + token < n_tokens) {
        const U32x4 v = *(const U32x4 *)(x + (size_t)(t0 + token) * cols + c0 + 4 * lane);
        packed.x = (u32)float_to_half(__uint_as_float(v.x)) |
                   ((u32)float_to_half(__uint_as_float(v.y)) << 16);
        packed.y = (u32)float_to_half(__uint_as_float(v.z)) |
                   ((u32)float_to_half(__uint_as_float(v.w)) << 16);
      }
      *(U32x2 *)(b_tile + token * TC_LD + 4 * lane) = packed;
    }
    __syncthreads();
    for (int k = 0; k < TC_K; k += 16) {
      FragAB b[2];
      for (int h = 0; h < 2; ++h)
        wmma_load_b_col(b[h], b_tile + (token_group * 32 + h * 16) * TC_LD + k, TC_LD);
      for (int m = 0; m < N_MATS; ++m)
        for (int i = 0; i < 2; ++i) {
          FragAB a;
          wmma_load_a_row(a, a_tile + m * TC_TILE_A + (row_group * 32 + i * 16) * TC_LD + k, TC_LD);
          for (int h = 0; h < 2; ++h)
            wmma_mma(acc[i][h][m], a, b[h]);
        }
    }
    __syncthreads(); // the tiles are rewritten by the next chunk
  }

  // Epilogue, one 16x16 tile at a time through the warp's own staging area
  // in the weight tiles, free now. Constant indices only: a loop over the
  // tiles would move the accumulators to local memory.
  float *const staging = (float *)a_tile + warp * (N_MATS * 256);
  const TcOutput o = {out, rows, n_tokens, accumulate};
  const int row_base = r0 + row_group * 32, token_base = t0 + token_group * 32;
  tc_write_tile<N_MATS>(acc[0][0], staging, o, row_base, token_base);
  tc_write_tile<N_MATS>(acc[0][1], staging, o, row_base, token_base + 16);
  tc_write_tile<N_MATS>(acc[1][0], staging, o, row_base + 16, token_base);
  tc_write_tile<N_MATS>(acc[1][1], staging, o, row_base + 16, token_base + 16);
}

#define BONSAI_TC_KERNELS(suffix, Type)                                                            \
  extern "C" __global__ void bonsai_gemm_tc_##suffix(                                              \
      const u8 *w, const float *x, float *out, int rows, int cols, int n_tokens, int accumulate) { \
    grid_entry();                                                                                  \
    tc_gemm<Type, 1>(w, w, x, out, rows, cols, n_tokens, accumulate);                              \
  }                                                                                                \
  extern "C" __global__ void bonsai_gemm_swiglu_tc_##suffix(                                       \
      const u8 *wg, const u8 *wu, const float *x, float *out, int rows, int cols, int n_tokens) {  \
    grid_entry();                                                                                  \
    tc_gemm<Type, 2>(wg, wu, x, out, rows, cols, n_tokens, 0);                                     \
  }

BONSAI_TC_KERNELS(q1_0, TypeQ1_0)
BONSAI_TC_KERNELS(q2_0, TypeQ2_0)
