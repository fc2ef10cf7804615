// Decode GEMV (one token) for the planar Q1_0/Q2_0 weights with int8
// activations and dp4a: the bandwidth-bound path of single-token steps.
//
// The input row is quantized once per token by bonsai_quantize_input into a
// global buffer: one Q8Record per 128-value weight block (int8 values, an
// f32 scale per 32 of them: x ~ scale * q), then, per half record, the sum
// of scale * q. The input is x itself or, fused, RMSNorm(x) * norm. Each
// GEMV block copies that buffer (152 bytes per 128 values, a quarter of the
// f32 row, no norm reduction) into shared memory. Without a staged buffer
// (int8_input=block) every block quantizes x itself instead: no extra
// launch, but each block reads the f32 row and reduces its norm again. One
// launch can serve several matrices that share the input (Dp4aTargets: Q,
// K and V).
//
// A launch computes one token per blockIdx.y (several sequences decoding in
// one step): each block reads its token's input row and writes its token's
// output rows, so the tokens of a step share one launch and, mostly through
// L2, one read of the weights.
//
// Then each warp computes DP4A_ROWS_PER_WARP consecutive rows. Their codes
// are one contiguous range of 16-byte chunks (the planar layout, see
// common_prelude.cuh); lane l takes chunks l, l + 32, ..., so a warp's loads
// are 512 contiguous bytes each. A chunk is one Q1_0 block or half a Q2_0
// block. With w = (code - offset) * d:
//   Q1_0: sum_j w_j x_j = d * (2 * sum_g scale_g * dot(bits_g, q_g) - sum_g scale_g * sum(q_g))
//   Q2_0: sum_j w_j x_j = d * (sum_g scale_g * dot(codes_g, q_g) - sum_g scale_g * sum(q_g))
// where dot(codes, q) runs on dp4a: one shift and mask of a code word gives
// four 0/1 (or 0..3) bytes that line up with four int8 activations.
#define DP4A_WARPS 8
#define DP4A_ROWS_PER_WARP 2

// dot(codes, x) / d of one chunk, for each planar type.
struct Dp4aQ1_0 {
  static const int CHUNKS = 1; // 16-byte chunks per weight block
  static __device__ __forceinline__ int group_dot(u32 bits, const U32x4 &lo, const U32x4 &hi) {
    const u32 m = 0x01010101u;
    int s = dp4a_u8_s8(bits & m, lo.x, 0);
    s = dp4a_u8_s8((bits >> 1) & m, lo.y, s);
    s = dp4a_u8_s8((bits >> 2) & m, lo.z, s);
    s = dp4a_u8_s8((bits >> 3) & m, lo.w, s);
    s = dp4a_u8_s8((bits >> 4) & m, hi.x, s);
    s = dp4a_u8_s8((bits >> 5) & m, hi.y, s);
    s = dp4a_u8_s8((bits >> 6) & m, hi.z, s);
    return dp4a_u8_s8((bits >> 7) & m, hi.w, s);
  }
  // A chunk's record in registers (Held): its eight words of int8 values,
  // four scales, and the two halves' sums of scale * q added up.
  struct Held {
    U32x4 q[8];
    U32x4 scale;
    float offset;
  };
  static __device__ __forceinline__ Held hold(const Q8Record &r, const float *offsets, int) {
    Held h;
    for (int i = 0; i < 8; ++i)
      h.q[i] = load_shared_u32x4((const U32x4 *)r.q + i);
    h.scale = load_shared_u32x4((const U32x4 *)r.scale);
    h.offset = offsets[0] + offsets[1];
    return h;
  }
  static __device__ __forceinline__ float held_dot(const U32x4 &w, const Held &h) {
    const float s = __uint_as_float(h.scale.x) * (float)group_dot(w.x, h.q[0], h.q[1]) +
                    __uint_as_float(h.scale.y) * (float)group_dot(w.y, h.q[2], h.q[3]) +
                    __uint_as_float(h.scale.z) * (float)group_dot(w.z, h.q[4], h.q[5]) +
                    __uint_as_float(h.scale.w) * (float)group_dot(w.w, h.q[6], h.q[7]);
    return 2.0f * s - h.offset;
  }
  // The same sum with the record in shared memory, each group's words
  // loaded just before its dot (fewer registers live than a Held).
  static __device__ __forceinline__ int group_dot(u32 bits, const U32x4 *lo_p, const U32x4 *hi_p) {
    const U32x4 lo = load_shared_u32x4(lo_p), hi = load_shared_u32x4(hi_p);
    return group_dot(bits, lo, hi);
  }
  static __device__ __forceinline__ float chunk_dot(const U32x4 &w, const Q8Record &r,
                                                    const float *offsets, int) {
    const U32x4 *q = (const U32x4 *)r.q;
    const U32x4 scale = load_shared_u32x4((const U32x4 *)r.scale);
    const float s = __uint_as_float(scale.x) * (float)group_dot(w.x, q, q + 1) +
                    __uint_as_float(scale.y) * (float)group_dot(w.y, q + 2, q + 3) +
                    __uint_as_float(scale.z) * (float)group_dot(w.z, q + 4, q + 5) +
                    __uint_as_float(scale.w) * (float)group_dot(w.w, q + 6, q + 7);
    return 2.0f * s - (offsets[0] + offsets[1]);
  }
};
struct Dp4aQ2_0 {
  static const int CHUNKS = 2; // a chunk is half a block: 64 codes, groups 2 part and 2 part + 1
  static __device__ __forceinline__ int word_dot(u32 codes, const U32x4 &q, int s) {
    const u32 m = 0x03030303u;
    s = dp4a_u8_s8(codes & m, q.x, s);
    s = dp4a_u8_s8((codes >> 2) & m, q.y, s);
    s = dp4a_u8_s8((codes >> 4) & m, q.z, s);
    return dp4a_u8_s8((codes >> 6) & m, q.w, s);
  }
  // A chunk's half record in registers: its four words of int8 values, two
  // scales and that half's sum of scale * q.
  struct Held {
    U32x4 q[4];
    float scale[2];
    float offset;
  };
  static __device__ __forceinline__ Held hold(const Q8Record &r, const float *offsets, int part) {
    Held h;
    for (int i = 0; i < 4; ++i)
      h.q[i] = load_shared_u32x4((const U32x4 *)r.q + 4 * part + i);
    h.scale[0] = r.scale[2 * part];
    h.scale[1] = r.scale[2 * part + 1];
    h.offset = offsets[part];
    return h;
  }
  static __device__ __forceinline__ float held_dot(const U32x4 &w, const Held &h) {
    const int lo = word_dot(w.y, h.q[1], word_dot(w.x, h.q[0], 0));
    const int hi = word_dot(w.w, h.q[3], word_dot(w.z, h.q[2], 0));
    return h.scale[0] * (float)lo + h.scale[1] * (float)hi - h.offset;
  }
  // The same sum with the record in shared memory, each word loaded just
  // before its dot.
  static __device__ __forceinline__ int word_dot(u32 codes, const U32x4 *q_p, int s) {
    const U32x4 q = load_shared_u32x4(q_p);
    return word_dot(codes, q, s);
  }
  static __device__ __forceinline__ float chunk_dot(const U32x4 &w, const Q8Record &r,
                                                    const float *offsets, int part) {
    const U32x4 *q = (const U32x4 *)r.q + 4 * part;
    const int lo = word_dot(w.y, q + 1, word_dot(w.x, q, 0));
    const int hi = word_dot(w.w, q + 3, word_dot(w.z, q + 2, 0));
    return r.scale[2 * part] * (float)lo + r.scale[2 * part + 1] * (float)hi - offsets[part];
  }
};

// Up to DP4A_MAX_TARGETS matrices of one type with the same input and
// column count in one launch: blocks [first_block[m], first_block[m + 1])
// compute matrix m (first_block[n] = the grid size).
#define DP4A_MAX_TARGETS 3
struct Dp4aTargets {
  const u8 *w[DP4A_MAX_TARGETS];
  float *out[DP4A_MAX_TARGETS];
  int rows[DP4A_MAX_TARGETS];
  int first_block[DP4A_MAX_TARGETS + 1];
  int n;
};

// The quantized input in the block's shared memory (records, then
// offsets): copied from in.staged with 16-byte loads, or quantized here.
__device__ Q8Record *stage_input(const Dp4aInput &in, float **offsets) {
  BONSAI_DYNAMIC_SHARED(U32x4, dp4a_shared);
  const int n_blocks = in.cols / 128;
  Q8Record *const records = (Q8Record *)dp4a_shared;
  *offsets = (float *)(records + n_blocks);
  if (in.staged != 0) {
    const int record_chunks = n_blocks * (int)(sizeof(Q8Record) / 16);
    for (int i = threadIdx.x; i < record_chunks; i += blockDim.x)
      dp4a_shared[i] = in.staged[i];
    const float *staged_offsets = (const float *)(in.staged + record_chunks);
    for (int i = threadIdx.x; i < 2 * n_blocks; i += blockDim.x)
      (*offsets)[i] = staged_offsets[i];
  } else {
    quantize_activations(in, records, *offsets);
  }
  __syncthreads();
  return records;
}

// A lane's first DP4A_PREFETCH chunks (codes and scales) of N_MATS
// matrices, loaded before the input is staged so that the weights' memory
// latency overlaps the quantization and its barrier.
#define DP4A_PREFETCH 4
template <int N_MATS> struct ChunkPrefetch {
  U32x4 codes[N_MATS][DP4A_PREFETCH];
  u16 scale[N_MATS][DP4A_PREFETCH];
};

// Where chunk c of a warp's rows lies: row row0 + r, chunk k of that row.
struct ChunkCursor {
  int r, k;
  __device__ __forceinline__ void advance(int by, int chunks_per_row) {
    k += by;
    while (k >= chunks_per_row) {
      k -= chunks_per_row;
      ++r;
    }
  }
};

// The weight layout a warp walks: n_chunks 16-byte chunks from first_chunk.
template <class T, class D> struct WarpChunks {
  int n_blocks, chunks_per_row, n_chunks;
  size_t codes_bytes, first_chunk;
  int row0;
  __device__ WarpChunks(int rows, int n_blocks_, int row0_) {
    n_blocks = n_blocks_;
    row0 = row0_;
    chunks_per_row = n_blocks * D::CHUNKS;
    n_chunks = min(DP4A_ROWS_PER_WARP, rows - row0) * chunks_per_row;
    codes_bytes = (size_t)rows * n_blocks * T::PAYLOAD;
    first_chunk = (size_t)row0 * chunks_per_row;
  }
  // Where lane `lane`'s first chunk lies.
  __device__ __forceinline__ ChunkCursor first_cursor(int lane) const {
    ChunkCursor at = {0, 0};
    at.advance(lane, chunks_per_row);
    return at;
  }
  __device__ __forceinline__ size_t block_index(const ChunkCursor &at) const {
    return (size_t)(row0 + at.r) * n_blocks + at.k / D::CHUNKS;
  }
};

// Inlined into every caller: the prefetched chunks must stay in registers.
template <class T, class D, int N_MATS>
__device__ __forceinline__ void prefetch_chunks(const u8 *const *w, const WarpChunks<T, D> &wc,
                                                ChunkPrefetch<N_MATS> &pf) {
  const int lane = threadIdx.x % 32;
  ChunkCursor at = wc.first_cursor(lane);
  for (int p = 0; p < DP4A_PREFETCH; ++p) {
    const int c = lane + 32 * p;
    for (int m = 0; m < N_MATS; ++m) {
      const U32x4 none = {0, 0, 0, 0};
      const bool mine = c < wc.n_chunks;
      pf.codes[m][p] = mine ? load_weight_u32x4(w[m] + (wc.first_chunk + c) * 16) : none;
      pf.scale[m][p] = mine ? ((const u16 *)(w[m] + wc.codes_bytes))[wc.block_index(at)] : 0;
    }
    at.advance(32, wc.chunks_per_row);
  }
}

// This warp's DP4A_ROWS_PER_WARP rows starting at row0 of N_MATS matrices
// with the same shape (the MLP's gate and up): acc[m][i] = W_m[row0 + i] . x.
// The lane's first chunks come from pf, the rest are loaded here.
template <class T, class D, int N_MATS>
__device__ __forceinline__ void
warp_rows(const u8 *const *w, const WarpChunks<T, D> &wc, const ChunkPrefetch<N_MATS> &pf,
          const Q8Record *records, const float *offsets, float (&acc)[N_MATS][DP4A_ROWS_PER_WARP]) {
  const int lane = threadIdx.x % 32;
  for (int m = 0; m < N_MATS; ++m)
    for (int i = 0; i < DP4A_ROWS_PER_WARP; ++i)
      acc[m][i] = 0.0f;
  ChunkCursor at = wc.first_cursor(lane);
  // One chunk's contribution to row at.r (a constant index keeps acc in registers).
  auto add = [&](int m, const U32x4 &codes, u16 scale) {
    const int b = at.k / D::CHUNKS, part = at.k % D::CHUNKS;
    const float v = half_to_float(scale) * D::chunk_dot(codes, records[b], offsets + 2 * b, part);
    for (int i = 0; i < DP4A_ROWS_PER_WARP; ++i)
      if (i == at.r)
        acc[m][i] += v;
  };
  for (int p = 0; p < DP4A_PREFETCH; ++p) {
    if (lane + 32 * p < wc.n_chunks)
      for (int m = 0; m < N_MATS; ++m)
        add(m, pf.codes[m][p], pf.scale[m][p]);
    at.advance(32, wc.chunks_per_row);
  }
  for (int c = lane + 32 * DP4A_PREFETCH; c < wc.n_chunks; c += 32) {
    for (int m = 0; m < N_MATS; ++m)
      add(m, load_weight_u32x4(w[m] + (wc.first_chunk + c) * 16),
          ((const u16 *)(w[m] + wc.codes_bytes))[wc.block_index(at)]);
    at.advance(32, wc.chunks_per_row);
  }
  for (int m = 0; m < N_MATS; ++m)
    for (int i = 0; i < DP4A_ROWS_PER_WARP; ++i)
      acc[m][i] = warp_sum(acc[m][i]);
}

// out_m = W_m x (+ out_m when accumulate) for each target m; token
// blockIdx.y's rows of x and out_m (out_m's rows are rows[m] floats apart).
template <class T, class D>
__device__ void gemv_dp4a(const Dp4aTargets &targets, Dp4aInput in, int accumulate) {
  // Constant indices only: a dynamic one would copy the parameters to local memory.
  const u8 *w = targets.w[0];
  float *out = targets.out[0];
  int rows = targets.rows[0], first_block = 0;
  for (int m = 1; m < DP4A_MAX_TARGETS; ++m)
    if (m < targets.n && (int)blockIdx.x >= targets.first_block[m]) {
      w = targets.w[m];
      out = targets.out[m];
      rows = targets.rows[m];
      first_block = targets.first_block[m];
    }
  in = token_input(in, blockIdx.y);
  out += (size_t)blockIdx.y * rows;
  const int warp = threadIdx.x / 32;
  const int row0 = ((blockIdx.x - first_block) * DP4A_WARPS + warp) * DP4A_ROWS_PER_WARP;
  const WarpChunks<T, D> wc(rows, in.cols / 128, row0);
  ChunkPrefetch<1> pf;
  if (row0 < rows)
    prefetch_chunks<T, D, 1>(&w, wc, pf);
  grid_entry(); // the weights are constant: fetched before the previous kernel ends
  float *offsets;
  const Q8Record *records = stage_input(in, &offsets); // every thread: it has a barrier
  if (row0 >= rows)
    return;
  float acc[1][DP4A_ROWS_PER_WARP];
  warp_rows<T, D, 1>(&w, wc, pf, records, offsets, acc);
  for (int i = 0; i < DP4A_ROWS_PER_WARP && row0 + i < rows; ++i)
    if (threadIdx.x % 32 == 0) {
      float *y = out + row0 + i;
      *y = accumulate ? *y + acc[0][i] : acc[0][i];
    }
}

// out = silu(Wg x) * (Wu x), both rows x cols; token blockIdx.y's rows of
// x and out.
template <class T, class D>
__device__ void gemv_swiglu_dp4a(const u8 *wg, const u8 *wu, Dp4aInput in, float *out, int rows) {
  in = token_input(in, blockIdx.y);
  out += (size_t)blockIdx.y * rows;
  const int row0 = (blockIdx.x * DP4A_WARPS + threadIdx.x / 32) * DP4A_ROWS_PER_WARP;
  const u8 *const w[2] = {wg, wu};
  const WarpChunks<T, D> wc(rows, in.cols / 128, row0);
  ChunkPrefetch<2> pf;
  if (row0 < rows)
    prefetch_chunks<T, D, 2>(w, wc, pf);
  grid_entry();
  float *offsets;
  const Q8Record *records = stage_input(in, &offsets);
  if (row0 >= rows)
    return;
  float acc[2][DP4A_ROWS_PER_WARP];
  warp_rows<T, D, 2>(w, wc, pf, records, offsets, acc);
  for (int i = 0; i < DP4A_ROWS_PER_WARP && row0 + i < rows; ++i)
    if (threadIdx.x % 32 == 0)
      out[row0 + i] = acc[0][i] / (1.0f + expf(-acc[0][i])) * acc[1][i];
}

// Quantizes the input row of token blockIdx.x into `staged` +
// blockIdx.x * Q8_ROW_STRIDE(in.cols) (Q8_ROW_BYTES(in.cols) bytes, 16-byte
// aligned) for the GEMVs that read it: one block of DP4A_WARPS warps per
// token; in.staged is ignored.
extern "C" __global__ void bonsai_quantize_input(Dp4aInput in, U32x4 *staged) {
  grid_entry();
  in.x += (size_t)blockIdx.x * in.cols;
  Q8Record *const records = (Q8Record *)(staged + (size_t)blockIdx.x * Q8_ROW_STRIDE(in.cols));
  quantize_activations(in, records, (float *)(records + in.cols / 128));
}

#define BONSAI_DP4A_KERNELS(suffix, Type, Dp4a)                                                    \
  extern "C" __global__ void bonsai_gemv_dp4a_##suffix(Dp4aTargets targets, Dp4aInput in,          \
                                                       int accumulate) {                           \
    gemv_dp4a<Type, Dp4a>(targets, in, accumulate);                                                \
  }                                                                                                \
  extern "C" __global__ void bonsai_gemv_swiglu_dp4a_##suffix(                                     \
      const u8 *wg, const u8 *wu, Dp4aInput in, float *out, int rows) {                            \
    gemv_swiglu_dp4a<Type, Dp4a>(wg, wu, in, out, rows);                                           \
  }

BONSAI_DP4A_KERNELS(q1_0, TypeQ1_0, Dp4aQ1_0)
BONSAI_DP4A_KERNELS(q2_0, TypeQ2_0, Dp4aQ2_0)
