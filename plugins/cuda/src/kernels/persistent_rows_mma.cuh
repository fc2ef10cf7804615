// The row dots of a matmul instruction on the int8 tensor cores
// (persistent_matmul=mma, steps of 2 to 8 tokens).
// persistent_matmul=mma, steps of 2 or more tokens: one piece's rows on
// the int8 tensor cores, a 16-row tile at a time. The step's tokens are
// the MMA's 8 columns, so each weight is decoded once for all of them, and
// for 16 rows x 32 columns a lane reads 2 words of activations for every
// token at once, where the dp4a rows read 4 per token. The MMA multiplies the raw codes (Q1_0: 0/1,
// Q2_0: 0..3); the records' offsets turn that into the weights' product as
// the dp4a rows do. A piece has a few tiles, fewer than warps, so the warps
// split each tile's 128-column blocks among them and add their sums up in
// `reduce` (shared memory).
template <class T, class M, int N_MATS, int KIND>
__device__ void pk_piece_rows_mma(const PersistentArgs &a, const PkPiece &p,
                                  const unsigned char *buffer, const unsigned char *staged,
                                  const PkControl *ctl, float *reduce, unsigned long long *best) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, c = lane % 4;
  const int rows = p.row_end - p.row_begin, n_blocks = p.cols / 128;
  const size_t token_bytes = PK_STAGED_TOKEN_BYTES(p.cols);
  const size_t codes_bytes = (size_t)rows * n_blocks * T::PAYLOAD;
  // Token g's record feeds column g of B; tokens 2c and 2c + 1 are this
  // lane's columns of C. A column of C depends on that column of B only, and
  // a row on that row of A, so columns past the step's tokens repeat its
  // last token and rows past the piece its last row: computed, never written.
  const int n_tokens = a.n_tokens;
  const Q8Record *const rec_b =
      (const Q8Record *)(staged + (size_t)min(g, n_tokens - 1) * token_bytes);
  const Q8Record *rec_c[2];
  for (int j = 0; j < 2; ++j)
    rec_c[j] = (const Q8Record *)(staged + (size_t)min(2 * c + j, n_tokens - 1) * token_bytes);
  for (int tile = 0; tile < rows; tile += 16) {
    const int row[2] = {min(tile + g, rows - 1), min(tile + g + 8, rows - 1)}; // A's g and g + 8
    float acc[N_MATS][4];
    for (int m = 0; m < N_MATS; ++m)
      for (int i = 0; i < 4; ++i)
        acc[m][i] = 0.0f;
    for (int b = warp; b < n_blocks; b += PK_WARPS) {
      u32 codes[N_MATS][2][M::WORDS];
      float d[N_MATS][2];
      for (int m = 0; m < N_MATS; ++m) {
        const unsigned char *const w = buffer + p.shared[m];
        for (int h = 0; h < 2; ++h) {
          const size_t block = (size_t)row[h] * n_blocks + b;
          for (int q = 0; q < M::WORDS / 4; ++q) {
            const U32x4 v = load_shared_u32x4((const U32x4 *)(w + block * T::PAYLOAD) + q);
            codes[m][h][4 * q] = v.x, codes[m][h][4 * q + 1] = v.y;
            codes[m][h][4 * q + 2] = v.z, codes[m][h][4 * q + 3] = v.w;
          }
          d[m][h] = half_to_float(((const u16 *)(w + codes_bytes))[block]);
        }
      }
      float part[N_MATS][4];
      for (int m = 0; m < N_MATS; ++m)
        for (int i = 0; i < 4; ++i)
          part[m][i] = 0.0f;
      BONSAI_UNROLL
      for (int s = 0; s < 4; ++s) {
        const u32 b0 = rec_b[b].q[8 * s + c], b1 = rec_b[b].q[8 * s + 4 + c];
        const float s0 = rec_c[0][b].scale[s], s1 = rec_c[1][b].scale[s];
        BONSAI_UNROLL
        for (int m = 0; m < N_MATS; ++m) {
          u32 operand[4];
          M::codes(codes[m][0], codes[m][1], s, c, operand);
          int dot[4] = {0, 0, 0, 0};
          mma_s8_m16n8k32(dot, operand, b0, b1);
          part[m][0] += s0 * (float)dot[0];
          part[m][1] += s1 * (float)dot[1];
          part[m][2] += s0 * (float)dot[2];
          part[m][3] += s1 * (float)dot[3];
        }
      }
      float offset[2]; // each C column's token: the sum of its values, scaled
      for (int j = 0; j < 2; ++j) {
        const float *const offsets = (const float *)(rec_c[j] + n_blocks) + 2 * b;
        offset[j] = offsets[0] + offsets[1];
      }
      for (int m = 0; m < N_MATS; ++m)
        for (int i = 0; i < 4; ++i) // element i: row g + 8 (i / 2), token 2c + i % 2
          acc[m][i] += d[m][i / 2] * ((float)M::CODE_SCALE * part[m][i] - offset[i % 2]);
    }
    // [warp][matrix][lane][element]: the readers below take consecutive words.
    for (int m = 0; m < N_MATS; ++m) {
      const U32x4 v = {__float_as_uint(acc[m][0]), __float_as_uint(acc[m][1]),
                       __float_as_uint(acc[m][2]), __float_as_uint(acc[m][3])};
      *(U32x4 *)(reduce + ((size_t)(warp * N_MATS + m) * 32 + lane) * 4) = v;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < 128; e += PK_THREADS) {
      const int l = e / 4, i = e % 4;
      const int r = tile + l / 4 + 8 * (i / 2), t = 2 * (l % 4) + i % 2;
      if (r >= rows || t >= n_tokens)
        continue;
      float sum[N_MATS];
      for (int m = 0; m < N_MATS; ++m) {
        sum[m] = 0.0f;
        for (int w = 0; w < PK_WARPS; ++w)
          sum[m] += reduce[(size_t)(w * N_MATS + m) * 128 + e];
      }
      const float scale = ctl->scales[t];
      pk_put_output<KIND>(p.out + (size_t)t * p.rows + p.row_begin + r, sum[0] * scale,
                          sum[N_MATS - 1] * scale);
      if (KIND == PK_LOGITS)
        best[t] = pk_max_key(best[t], pk_best_key(sum[0] * scale, p.row_begin + r));
    }
    __syncthreads(); // `reduce` is written again for the next tile
  }
}
