// Prefill GEMM on int8 tensor cores (compute capability 8.0 and newer) for
// the planar Q1_0 and Q2_0 weights: out[t][row] = W[row] . x[t].
//
// The activations are first quantized to int8 by bonsai_quantize_rows (one
// block per token, the Q8Record format of int8_input.cuh: a scale per 32
// values), so no f16 rounding can overflow: every product is an int8 weight
// (Q1_0: +-1, Q2_0: code - 1 in -1..2) times an int8 activation, summed in
// int32 over 32 values, then scaled in f32 by the activation's scale and,
// per 128-value block, by the weight's d.
//
// A block of 8 warps computes 128 rows x 64 tokens; warp w owns rows
// 16 w .. 16 w + 15 and all 64 tokens (eight 16x8 tiles), so each weight
// is decoded once per block, straight from the codes into the registers of
// the MMA's A operand, and reused for 64 tokens. Per 128-value block the
// raw codes of the 128 rows and the 64 tokens' records are staged in shared
// memory with cp.async, two stages deep: the copy of block b + 1 runs while
// block b is multiplied. The MMA and its operands: int8_mma.cuh.
#define MMQ_WARPS 8
#define MMQ_THREADS (32 * MMQ_WARPS)
#define MMQ_ROWS 128  // 16 per warp
#define MMQ_TOKENS 64 // eight 8-token tiles per warp
#define MMQ_TILES (MMQ_TOKENS / 8)
#define MMQ_RECORD_CHUNKS ((int)(sizeof(Q8Record) / 16))
// One stage: the codes of N_MATS x MMQ_ROWS weight blocks, then MMQ_TOKENS
// records. Two stages: at most 2 x (2 x 4096 + 9216) = 34,816 bytes (Q2_0
// gate/up), under the 48 KB any block may have.
#define MMQ_STAGE_BYTES(payload, n_mats) ((n_mats)*MMQ_ROWS * (payload) + MMQ_TOKENS * 144)
#define MMQ_SHARED_BYTES(payload, n_mats) (2 * MMQ_STAGE_BYTES(payload, n_mats))

// Where a block's stages live in shared memory and what fills them.
template <class T, int N_MATS> struct MmqStages {
  u8 *base;
  const u8 *w[N_MATS];
  const u8 *xq; // n_tokens x n_blocks records
  int rows, n_blocks, n_tokens, r0, t0;

  __device__ u8 *codes(int stage, int m) const {
    return base + stage * MMQ_STAGE_BYTES(T::PAYLOAD, N_MATS) + m * MMQ_ROWS * T::PAYLOAD;
  }
  __device__ const Q8Record *records(int stage) const {
    return (const Q8Record *)(base + stage * MMQ_STAGE_BYTES(T::PAYLOAD, N_MATS) +
                              N_MATS * MMQ_ROWS * T::PAYLOAD);
  }
  // Every thread's share of the copies of weight block b into `stage`, as
  // one cp.async group. Rows and tokens past the end get zeros instead.
  __device__ void fill(int stage, int b) const {
    const int chunks_per_row = T::PAYLOAD / 16;
    const int weight_chunks = N_MATS * MMQ_ROWS * chunks_per_row;
    const U32x4 zero = {0, 0, 0, 0};
    for (int i = threadIdx.x; i < weight_chunks; i += MMQ_THREADS) {
      const int m = i / (MMQ_ROWS * chunks_per_row), row = i / chunks_per_row % MMQ_ROWS;
      const int part = i % chunks_per_row;
      u8 *dst = codes(stage, m) + row * T::PAYLOAD + 16 * part;
      const u8 *wm = m == 0 ? w[0] : w[N_MATS - 1]; // constant indices keep w in registers
      if (r0 + row < rows)
        cp_async_16(dst, wm + ((size_t)(r0 + row) * n_blocks + b) * T::PAYLOAD + 16 * part);
      else
        *(U32x4 *)dst = zero;
    }
    u8 *const rec = (u8 *)records(stage);
    for (int i = threadIdx.x; i < MMQ_TOKENS * MMQ_RECORD_CHUNKS; i += MMQ_THREADS) {
      const int token = i / MMQ_RECORD_CHUNKS, part = i % MMQ_RECORD_CHUNKS;
      u8 *dst = rec + token * sizeof(Q8Record) + 16 * part;
      if (t0 + token < n_tokens)
        cp_async_16(dst, xq + ((size_t)(t0 + token) * n_blocks + b) * sizeof(Q8Record) + 16 * part);
      else
        *(U32x4 *)dst = zero;
    }
    cp_async_commit();
  }
  // The f16 scales of weight block b for rows g and g + 8 of `warp` (0 past the end).
  __device__ void scales(int b, int warp, int g, float (&d)[N_MATS][2]) const {
    for (int m = 0; m < N_MATS; ++m)
      for (int h = 0; h < 2; ++h) {
        const int row = r0 + 16 * warp + g + 8 * h;
        d[m][h] = row < rows ? T::block(w[m], rows, n_blocks, row, b).d : 0.0f;
      }
  }
};

// N_MATS = 1: out = W x (+ out when accumulate); N_MATS = 2: the MLP's gate
// and up, out = silu(Wg x) * (Wu x). xq: the rows quantized by
// bonsai_quantize_rows.
template <class T, class M, int N_MATS>
__device__ void mmq_gemm(const u8 *w0, const u8 *w1, const u8 *xq, float *out, int rows, int cols,
                         int n_tokens, int accumulate) {
  BONSAI_DYNAMIC_SHARED(U32x4, mmq_shared);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, c = lane % 4;
  MmqStages<T, N_MATS> st;
  st.base = (u8 *)mmq_shared;
  st.w[0] = w0;
  if (N_MATS == 2)
    st.w[N_MATS - 1] = w1;
  st.xq = xq;
  st.rows = rows;
  st.n_blocks = cols / 128;
  st.n_tokens = n_tokens;
  st.r0 = blockIdx.x * MMQ_ROWS;
  st.t0 = blockIdx.y * MMQ_TOKENS;

  float acc[N_MATS][MMQ_TILES][4];
  for (int m = 0; m < N_MATS; ++m)
    for (int j = 0; j < MMQ_TILES; ++j)
      for (int i = 0; i < 4; ++i)
        acc[m][j][i] = 0.0f;

  float d[N_MATS][2];
  st.scales(0, warp, g, d); // constant weights: before the previous grid ends
  grid_entry();
  st.fill(0, 0);
  for (int b = 0; b < st.n_blocks; ++b) {
    const int stage = b % 2;
    float next_d[N_MATS][2] = {};
    if (b + 1 < st.n_blocks) {
      st.fill(1 - stage, b + 1); // its last reader passed the barrier that ended block b - 1
      st.scales(b + 1, warp, g, next_d);
      cp_async_wait<1>(); // block b's group has landed, b + 1's may still fly
    } else {
      cp_async_wait<0>();
    }
    __syncthreads(); // every thread's copies of block b are visible

    const Q8Record *rec = st.records(stage);
    float part[N_MATS][MMQ_TILES][4];
    for (int m = 0; m < N_MATS; ++m)
      for (int j = 0; j < MMQ_TILES; ++j)
        for (int i = 0; i < 4; ++i)
          part[m][j][i] = 0.0f;
    u32 lo[N_MATS][M::WORDS], hi[N_MATS][M::WORDS];
    for (int m = 0; m < N_MATS; ++m) {
      const U32x4 *row_lo = (const U32x4 *)(st.codes(stage, m) + (16 * warp + g) * T::PAYLOAD);
      const U32x4 *row_hi = row_lo + 8 * T::PAYLOAD / 16;
      for (int q = 0; q < M::WORDS / 4; ++q) {
        const U32x4 l = load_shared_u32x4(row_lo + q), h = load_shared_u32x4(row_hi + q);
        lo[m][4 * q] = l.x, lo[m][4 * q + 1] = l.y, lo[m][4 * q + 2] = l.z, lo[m][4 * q + 3] = l.w;
        hi[m][4 * q] = h.x, hi[m][4 * q + 1] = h.y, hi[m][4 * q + 2] = h.z, hi[m][4 * q + 3] = h.w;
      }
    }
    for (int s = 0; s < 4; ++s) {
      u32 a[N_MATS][4];
      for (int m = 0; m < N_MATS; ++m)
        M::operand(lo[m], hi[m], s, c, a[m]);
      for (int j = 0; j < MMQ_TILES; ++j) {
        const Q8Record &mine = rec[8 * j + g]; // token 8 j + g's values for B
        const u32 b0 = mine.q[8 * s + c], b1 = mine.q[8 * s + 4 + c];
        // C's columns are tokens 8 j + 2 c and 8 j + 2 c + 1.
        const float s0 = rec[8 * j + 2 * c].scale[s], s1 = rec[8 * j + 2 * c + 1].scale[s];
        for (int m = 0; m < N_MATS; ++m) {
          int dot[4] = {0, 0, 0, 0};
          mma_s8_m16n8k32(dot, a[m], b0, b1);
          part[m][j][0] += s0 * (float)dot[0];
          part[m][j][1] += s1 * (float)dot[1];
          part[m][j][2] += s0 * (float)dot[2];
          part[m][j][3] += s1 * (float)dot[3];
        }
      }
    }
    for (int m = 0; m < N_MATS; ++m)
      for (int j = 0; j < MMQ_TILES; ++j)
        for (int i = 0; i < 4; ++i)
          acc[m][j][i] += d[m][i / 2] * part[m][j][i];
    for (int m = 0; m < N_MATS; ++m)
      for (int h = 0; h < 2; ++h)
        d[m][h] = next_d[m][h];
    __syncthreads(); // this stage is refilled by the next iteration
  }

  // Element i of tile j: row g (+ 8 for i >= 2), token 8 j + 2 c + i % 2.
  // Lanes of one c write 8 consecutive rows of a token: 32-byte pieces.
  for (int j = 0; j < MMQ_TILES; ++j)
    for (int i = 0; i < 4; ++i) {
      const int row = st.r0 + 16 * warp + g + 8 * (i / 2);
      const int token = st.t0 + 8 * j + 2 * c + i % 2;
      if (row >= rows || token >= n_tokens)
        continue;
      float *y = out + (size_t)token * rows + row;
      const float v = acc[0][j][i];
      if (N_MATS == 2)
        *y = v / (1.0f + expf(-v)) * acc[N_MATS - 1][j][i];
      else
        *y = accumulate ? *y + v : v;
    }
}

// Quantizes n_tokens rows of x (cols floats each) for the GEMMs below: one
// block of 8 warps per row, gridDim.x = n_tokens. Row t's records go to
// staged + t * (cols / 128) records; their offsets (unused here) after all
// rows' records.
extern "C" __global__ void bonsai_quantize_rows(const float *x, int cols, int n_tokens,
                                                U32x4 *staged) {
  grid_entry();
  const int t = blockIdx.x, n_blocks = cols / 128;
  Dp4aInput in = {x + (size_t)t * cols, 0, 0.0f, cols, 0};
  Q8Record *const records = (Q8Record *)staged;
  float *const offsets = (float *)(records + (size_t)n_tokens * n_blocks);
  quantize_activations(in, records + (size_t)t * n_blocks, offsets + (size_t)t * 2 * n_blocks);
}

#define BONSAI_MMQ_KERNELS(suffix, Type, Mmq)                                                      \
  extern "C" __global__ void bonsai_gemm_mmq_##suffix(                                             \
      const u8 *w, const u8 *xq, float *out, int rows, int cols, int n_tokens, int accumulate) {   \
    mmq_gemm<Type, Mmq, 1>(w, w, xq, out, rows, cols, n_tokens, accumulate);                       \
  }                                                                                                \
  extern "C" __global__ void bonsai_gemm_swiglu_mmq_##suffix(                                      \
      const u8 *wg, const u8 *wu, const u8 *xq, float *out, int rows, int cols, int n_tokens) {    \
    mmq_gemm<Type, Mmq, 2>(wg, wu, xq, out, rows, cols, n_tokens, 0);                              \
  }

BONSAI_MMQ_KERNELS(q1_0, TypeQ1_0, MmqQ1_0)
BONSAI_MMQ_KERNELS(q2_0, TypeQ2_0, MmqQ2_0)
