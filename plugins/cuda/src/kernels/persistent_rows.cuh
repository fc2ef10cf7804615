// The row dots of a matmul instruction with dp4a, from the weight buffer:
// for every token of the step (pk_piece_rows), and for single tokens with
// the input records held in registers (pk_piece_rows_held,
// persistent_records=registers).
// N_MATS matrices of `rows` x `cols` read together (the MLP's gate and up),
// planar (codes, then scales) in the block's weight buffer.
template <int N_MATS> struct PkMatmul {
  const u8 *w[N_MATS];
  int rows, cols;
};

// Rows [row0, row0 + DP4A_ROWS_PER_WARP) of this warp for every token:
// acc[t][m][i] = (W_m row0 + i) . (token t's staged input). Each weight
// chunk is read once (from shared memory) and used for all the tokens.
// MAX_T bounds the token loops: PK_MAX_TOKENS, or 1 for single-token steps,
// whose loop is then one token's code with no branch per absent token.
template <class T, class D, int N_MATS, int MAX_T>
__device__ __forceinline__ void pk_warp_rows(const PkMatmul<N_MATS> &mm, int row0,
                                             const unsigned char *staged, int n_tokens,
                                             float (&acc)[MAX_T][N_MATS][DP4A_ROWS_PER_WARP]) {
  const int lane = threadIdx.x % 32;
  const WarpChunks<T, D> wc(mm.rows, mm.cols / 128, row0);
  const size_t row_bytes = PK_STAGED_TOKEN_BYTES(mm.cols);
  for (int t = 0; t < MAX_T; ++t)
    for (int m = 0; m < N_MATS; ++m)
      for (int i = 0; i < DP4A_ROWS_PER_WARP; ++i)
        acc[t][m][i] = 0.0f;
  ChunkCursor at = wc.first_cursor(lane);
  for (int c = lane; c < wc.n_chunks; c += 32) {
    const int b = at.k / D::CHUNKS, part = at.k % D::CHUNKS;
    BONSAI_UNROLL
    for (int m = 0; m < N_MATS; ++m) {
      const U32x4 codes = load_shared_u32x4((const U32x4 *)(mm.w[m] + (wc.first_chunk + c) * 16));
      const float d = half_to_float(((const u16 *)(mm.w[m] + wc.codes_bytes))[wc.block_index(at)]);
      BONSAI_UNROLL
      for (int t = 0; t < MAX_T; ++t) {
        if (t >= n_tokens) // uniform; continue, not break, so the loop unrolls
          continue;
        const Q8Record *records = (const Q8Record *)(staged + (size_t)t * row_bytes);
        const float *offsets = (const float *)(records + wc.n_blocks) + 2 * b;
        const float v = d * D::chunk_dot(codes, records[b], offsets, part);
        // Added to every row, zero to all but its own: an `if (i == at.r)`
        // would be turned into acc[..][at.r], a run-time index into local memory.
        for (int i = 0; i < DP4A_ROWS_PER_WARP; ++i)
          acc[t][m][i] += i == at.r ? v : 0.0f;
      }
    }
    at.advance(32, wc.chunks_per_row);
  }
  for (int t = 0; t < MAX_T; ++t) {
    if (t >= n_tokens)
      continue;
    for (int m = 0; m < N_MATS; ++m)
      for (int i = 0; i < DP4A_ROWS_PER_WARP; ++i)
        acc[t][m][i] = warp_sum(acc[t][m][i]);
  }
}

// One piece's rows from the weight buffer, 16 rows (DP4A_ROWS_PER_WARP per
// warp) at a time, for every token of the step.
// PK_LOGITS: best[t] keeps token t's best row key of those written here.
template <class T, class D, int N_MATS, int KIND, int MAX_T>
__device__ void pk_piece_rows(const PersistentArgs &a, const PkPiece &p,
                              const unsigned char *buffer, const unsigned char *staged,
                              const PkControl *ctl, unsigned long long *best) {
  const int lane = threadIdx.x % 32;
  PkMatmul<N_MATS> mm;
  for (int m = 0; m < N_MATS; ++m)
    mm.w[m] = buffer + p.shared[m];
  mm.rows = p.row_end - p.row_begin;
  mm.cols = p.cols;
  for (int row0 = threadIdx.x / 32 * DP4A_ROWS_PER_WARP; row0 < mm.rows; row0 += PK_TILE_ROWS) {
    float acc[MAX_T][N_MATS][DP4A_ROWS_PER_WARP];
    pk_warp_rows<T, D, N_MATS, MAX_T>(mm, row0, staged, a.n_tokens, acc);
    for (int t = 0; t < MAX_T; ++t) {
      if (t >= a.n_tokens)
        continue;
      const float scale = ctl->scales[t];
      float *const out = p.out + (size_t)t * p.rows + p.row_begin;
      for (int i = 0; i < DP4A_ROWS_PER_WARP; ++i) { // a constant bound: acc stays in registers
        if (lane != 0 || row0 + i >= mm.rows)
          continue;
        pk_put_output<KIND>(out + row0 + i, acc[t][0][i] * scale, acc[t][N_MATS - 1][i] * scale);
        if (KIND == PK_LOGITS)
          best[t] = pk_max_key(best[t], pk_best_key(acc[t][0][i] * scale, p.row_begin + row0 + i));
      }
    }
  }
}

// persistent_records=registers, single-token steps: one piece's rows with
// each lane holding its chunk columns' input records in registers (column
// j of every row is lane j % 32's), so that a chunk dot reads only its
// 16 bytes of weights from shared memory, where pk_piece_rows reads the
// chunk's 144-byte record again for every row. A warp sums PK_HELD_SUMS
// (row, matrix) pairs at a time, rows warp, warp + PK_WARPS, ..., each lane
// over its columns; then one transposed reduction leaves lane l the total
// of pair l (31 shuffles for 32 sums, where a reduction per row takes 5
// each).
#define PK_HELD_SUMS 32 // one per lane after the reduction
// One step of the transposed reduction of a warp's PK_HELD_SUMS sums: a
// lane keeps the half of its first 2 * HALF sums whose index has its lane
// bit HALF, adds its partner's copy of that half and sends it the other
// half. After the steps of 16, 8, 4, 2 and 1, a lane's sum[0] is the sum
// of pair `lane` over all lanes. (A template, so that every index is a
// constant and the sums stay in registers.)
template <int HALF>
__device__ __forceinline__ void pk_reduce_step(float (&sum)[PK_HELD_SUMS], int lane) {
  const bool upper = (lane & HALF) != 0;
  BONSAI_UNROLL
  for (int k = 0; k < HALF; ++k) {
    const float keep = upper ? sum[k + HALF] : sum[k];
    const float send = upper ? sum[k] : sum[k + HALF];
    sum[k] = keep + __shfl_xor_sync(0xffffffffu, send, HALF);
  }
}
template <class T, class D, int N_MATS, int KIND>
__device__ void pk_piece_rows_held(const PkPiece &p, const unsigned char *buffer,
                                   const unsigned char *staged, const PkControl *ctl) {
  constexpr int ROWS = PK_HELD_SUMS / N_MATS; // rows a warp takes at a time
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int rows = p.row_end - p.row_begin, n_blocks = p.cols / 128;
  const int chunks_per_row = n_blocks * D::CHUNKS;
  const size_t codes_bytes = (size_t)rows * n_blocks * T::PAYLOAD;
  const Q8Record *const records = (const Q8Record *)staged; // the step's one token
  const float *const offsets = (const float *)(records + n_blocks);
  const float scale = ctl->scales[0];
  for (int first = warp; first < rows; first += PK_WARPS * ROWS) {
    float sum[PK_HELD_SUMS]; // pair m * ROWS + i: matrix m, row first + i * PK_WARPS
    for (int k = 0; k < PK_HELD_SUMS; ++k)
      sum[k] = 0.0f;
    for (int j = lane; j < chunks_per_row; j += 32) {
      const int b = j / D::CHUNKS;
      const typename D::Held held = D::hold(records[b], offsets + 2 * b, j % D::CHUNKS);
      BONSAI_UNROLL
      for (int i = 0; i < ROWS; ++i) {
        const int r = first + i * PK_WARPS;
        if (r >= rows) // the same for the whole warp
          continue;
        BONSAI_UNROLL
        for (int m = 0; m < N_MATS; ++m) {
          const unsigned char *const w = buffer + p.shared[m];
          const U32x4 codes =
              load_shared_u32x4((const U32x4 *)(w + ((size_t)r * chunks_per_row + j) * 16));
          const float d = half_to_float(((const u16 *)(w + codes_bytes))[(size_t)r * n_blocks + b]);
          sum[m * ROWS + i] += d * D::held_dot(codes, held);
        }
      }
    }
    pk_reduce_step<16>(sum, lane);
    pk_reduce_step<8>(sum, lane);
    pk_reduce_step<4>(sum, lane);
    pk_reduce_step<2>(sum, lane);
    pk_reduce_step<1>(sum, lane);
    // Lane i (< ROWS) has matrix 0's row first + i * PK_WARPS; with gate
    // and up, lane i + ROWS has the row's up.
    const float up = N_MATS == 2 ? __shfl_xor_sync(0xffffffffu, sum[0], ROWS) : sum[0];
    const int r = first + lane * PK_WARPS;
    if (lane < ROWS && r < rows)
      pk_put_output<KIND>(p.out + p.row_begin + r, sum[0] * scale, up * scale);
  }
}
