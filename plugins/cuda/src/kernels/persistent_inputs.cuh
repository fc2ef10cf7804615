// A matmul instruction's inputs: every token's row quantized into int8
// records in shared memory after the wait (persistent_quantize=consumer, and
// layer 0's Q/K/V), or, with persistent_quantize=producer, the records the
// stage before quantized once, copied in; and that producer side, which
// quantizes each 128-row group of an output when its rows are complete.
// Quantizes every token's input row (times norm when not NULL, but
// without the 1/rms factor: int8 codes do not depend on a common scale)
// into `staged`, PK_STAGED_TOKEN_BYTES(cols) apart, and sets ctl->scales[t] to
// what token t's row dots must be multiplied by: its 1/rms with a norm,
// else 1. The sums of squares come out of the same pass, so no block
// reduction stands before the first quantized value.
__device__ void pk_stage_inputs(const float *x, const float *norm, float eps, int cols,
                                int n_tokens, unsigned char *staged, PkControl *ctl) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_blocks = cols / 128;
  __syncthreads(); // the previous instruction's staged rows are no longer read
  float ss[PK_MAX_TOKENS];
  for (int t = 0; t < PK_MAX_TOKENS; ++t)
    ss[t] = 0.0f;
  // PK_STAGE_BATCH items per warp at a time, their loads issued together:
  // the inputs come from L2, and one load in flight per warp would leave
  // most of each item's time to latency.
  const int n_items = n_tokens * n_blocks;
  for (int first = warp; first < n_items; first += PK_STAGE_BATCH * PK_WARPS) {
    U32x4 values[PK_STAGE_BATCH], norms[PK_STAGE_BATCH];
    BONSAI_UNROLL
    for (int u = 0; u < PK_STAGE_BATCH; ++u) {
      const int item = first + u * PK_WARPS, t = item / n_blocks, b = item % n_blocks;
      const U32x4 none = {0, 0, 0, 0};
      const bool mine = item < n_items; // the same for the whole warp
      values[u] = mine ? *(const U32x4 *)(x + (size_t)t * cols + (size_t)b * 128 + 4 * lane) : none;
      norms[u] = mine && norm != 0 ? *(const U32x4 *)(norm + (size_t)b * 128 + 4 * lane) : none;
    }
    BONSAI_UNROLL
    for (int u = 0; u < PK_STAGE_BATCH; ++u) {
      const int item = first + u * PK_WARPS, t = item / n_blocks, b = item % n_blocks;
      if (item >= n_items)
        continue;
      float v0 = __uint_as_float(values[u].x), v1 = __uint_as_float(values[u].y);
      float v2 = __uint_as_float(values[u].z), v3 = __uint_as_float(values[u].w);
      const float squares = v0 * v0 + v1 * v1 + v2 * v2 + v3 * v3;
      for (int tt = 0; tt < PK_MAX_TOKENS; ++tt) // constant indices keep ss in registers
        ss[tt] += tt == t ? squares : 0.0f;
      if (norm != 0) {
        v0 *= __uint_as_float(norms[u].x), v1 *= __uint_as_float(norms[u].y);
        v2 *= __uint_as_float(norms[u].z), v3 *= __uint_as_float(norms[u].w);
      }
      Q8Record *const records = (Q8Record *)(staged + (size_t)t * PK_STAGED_TOKEN_BYTES(cols));
      quantize_lane(v0, v1, v2, v3, lane, &records[b], (float *)(records + n_blocks) + 2 * b);
    }
  }
  for (int t = 0; t < PK_MAX_TOKENS; ++t) {
    if (t >= n_tokens)
      continue;
    const float total = warp_sum(ss[t]);
    if (lane == 0)
      ctl->partials[warp][t] = total;
  }
  __syncthreads();
  if ((int)threadIdx.x < n_tokens) {
    float total = 0.0f;
    for (int w = 0; w < PK_WARPS; ++w)
      total += ctl->partials[w][threadIdx.x];
    ctl->scales[threadIdx.x] = norm != 0 ? 1.0f / sqrtf(total / (float)cols + eps) : 1.0f;
  }
  __syncthreads();
}

// persistent_quantize=producer, the reading side: copies every token's
// staged row of stage `op` (written by the instructions before the wait)
// into `staged` and sets ctl->scales[t] from the rows' sums of squares where
// the stage has a norm. The caller waits for the copies (cp.async, unless
// the weights stream: then plain loads, landed at once).
__device__ void pk_copy_inputs(const PersistentArgs &a, int op, const float *norm, int cols,
                               unsigned char *staged, PkControl *ctl) {
  __syncthreads(); // the previous instruction's staged rows are no longer read
  const int row_chunks = Q8_ROW_STRIDE(cols), chunks = a.n_tokens * row_chunks;
  // Streaming weights (persistent_stream), the cp.async groups are the
  // weight slots' alone: the rows come through registers instead.
  const bool streaming = a.stream_slots > 1;
  for (int c = threadIdx.x; c < chunks; c += PK_THREADS) { // rows apart in memory, padded here
    unsigned char *const dst = staged + (size_t)(c / row_chunks) * PK_STAGED_TOKEN_BYTES(cols) +
                               16 * (size_t)(c % row_chunks);
    if (streaming)
      *(U32x4 *)dst = *(const U32x4 *)(a.q8[op] + 16 * (size_t)c);
    else
      cp_async_16(dst, a.q8[op] + 16 * (size_t)c);
  }
  if (!streaming)
    cp_async_commit();
  static_assert(PK_MAX_TOKENS <= PK_WARPS, "a warp per token");
  // Warp t adds token t's group sums, a lane's loads all in flight at once
  // (one thread adding them in a loop waited on L2 batch after batch: the
  // normed stages' inputs took about 0.5 us longer than the others' at one
  // token of 8B on an H200).
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (warp < a.n_tokens) { // the same for the whole warp
    float scale = 1.0f;
    if (norm != 0) {
      const float *sums = a.q8_sumsq[op] + (size_t)warp * a.q8_groups;
      float total = 0.0f;
      for (int g = lane; g < cols / 128; g += 32)
        total += sums[g];
      scale = 1.0f / sqrtf(warp_sum(total) / (float)cols + a.dims.eps);
    }
    if (lane == 0)
      ctl->scales[warp] = scale;
  }
}

// persistent_quantize=producer, the writing side, one warp: group g (128
// values, the lane's four in v0..v3) of token row `row` of an output
// `width` wide, quantized into the staged row stage `consumer` copies. With
// a norm (the lane's four of its weights; null: none) the group's sum of
// squares goes beside it and the codes are of the values times the norm.
__device__ void pk_put_group(const PersistentArgs &a, int consumer, int width, int row, int g,
                             float v0, float v1, float v2, float v3, const float *norm) {
  const int lane = threadIdx.x % 32;
  if (norm != 0) {
    const float squares = warp_sum(v0 * v0 + v1 * v1 + v2 * v2 + v3 * v3);
    if (lane == 0)
      pk_store(a.q8_sumsq[consumer] + (size_t)row * a.q8_groups + g, squares);
    v0 *= norm[0], v1 *= norm[1], v2 *= norm[2], v3 *= norm[3];
  }
  const Q8Lane q = quantize_lane_values(v0, v1, v2, v3);
  Q8Record *const records = (Q8Record *)(a.q8[consumer] + (size_t)row * PK_STAGED_ROW_BYTES(width));
  pk_store(&records[g].q[lane], q.codes);
  if (lane % 8 == 0)
    pk_store(&records[g].scale[lane / 8], q.scale);
  float *const offsets = (float *)(records + width / 128) + 2 * g;
  if (lane % 16 == 0)
    pk_store(offsets + lane / 16, q.offset);
}

// persistent_quantize=producer after a matmul instruction of the output
// projection, gate/up or the down projection has written its rows (one
// piece): it counts them into each 128-row group they fall in, and the
// block whose rows complete a group quantizes that group, every token's,
// for the stage that reads it (the down projection: the next layer's
// Q/K/V, or after the last layer the LM head in the launch).
__device__ void pk_publish_groups(const PersistentArgs &a, const PkInstr &ins, const PkPiece &p,
                                  PkControl *ctl) {
  const int consumer = ins.op == PK_OUTPUT ? PK_FFN_UP : ins.op == PK_FFN_UP ? PK_FFN_DOWN : PK_QKV;
  // After the last layer the down projection's reader is the LM head.
  const bool last_layer = ins.layer == a.n_layer - 1;
  const float *norm = ins.op == PK_OUTPUT                    ? a.layers[ins.layer].ffn_norm
                      : ins.op == PK_FFN_DOWN && !last_layer ? a.layers[ins.layer + 1].attn_norm
                      : ins.op == PK_FFN_DOWN                ? a.output_norm
                                                             : 0;
  const int first = p.row_begin / 128, last = (p.row_end - 1) / 128;
  __syncthreads(); // the rows are written
  if (threadIdx.x == 0) {
    pk_fence(); // publishes them before the counts say so
    int *const counts = a.group_rows + ((size_t)ins.layer * PK_STAGES + ins.op) * a.q8_groups;
    for (int w = 0; w < PK_MAX_Q8_GROUPS / 32; ++w)
      ctl->complete[w] = 0;
    for (int g = first; g <= last; ++g) {
      const int begin = p.row_begin > g * 128 ? p.row_begin : g * 128;
      const int rows = min(p.row_end, (g + 1) * 128) - begin;
      if (pk_arrive(counts + g, rows) + rows == 128) // acquires the other blocks' rows
        ctl->complete[(g - first) / 32] |= 1u << ((g - first) % 32);
    }
  }
  __syncthreads();
  const int lane = threadIdx.x % 32, width = p.rows;
  for (int item = threadIdx.x / 32; item < (last - first + 1) * a.n_tokens; item += PK_WARPS) {
    const int k = item / a.n_tokens, t = item % a.n_tokens, g = first + k;
    if ((ctl->complete[k / 32] >> (k % 32) & 1u) == 0) // the same for the whole warp
      continue;
    const U32x4 v = *(const U32x4 *)(p.out + (size_t)t * width + (size_t)g * 128 + 4 * lane);
    pk_put_group(a, consumer, width, t, g, __uint_as_float(v.x), __uint_as_float(v.y),
                 __uint_as_float(v.z), __uint_as_float(v.w),
                 norm != 0 ? norm + (size_t)g * 128 + 4 * lane : 0);
  }
}
