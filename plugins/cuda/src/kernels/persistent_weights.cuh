// A matmul instruction's weights: the pieces of the stage's matrices its
// tiles cover, their copy into the block's weight buffer with cp.async
// (started before the wait), and option persistent_prefetch=next's requests
// to L2 for the block's next instruction. Also what a matmul writes per
// output element (PK_SET, PK_ADD, PK_SWIGLU, PK_LOGITS).
// What a matmul instruction writes: out = W in, out += W in (residual),
// out = silu(Wg in) * (Wu in), or (the LM head) out = W in with each
// token's best row kept.
#define PK_SET 0
#define PK_ADD 1
#define PK_SWIGLU 2
#define PK_LOGITS 3

// Writes one output row element of a matmul instruction from its sums
// (already scaled; `up` is read for PK_SWIGLU only).
template <int KIND> __device__ __forceinline__ void pk_put_output(float *y, float gate, float up) {
  const float v = KIND == PK_SWIGLU ? gate / (1.0f + expf(-gate)) * up : gate;
  pk_store(y, KIND == PK_ADD ? *y + v : v);
}

// The rows of one matrix (or of gate and up together) that a matmul
// instruction computes, and where their copy lies in the weight buffer:
// per matrix the codes of those rows, then their scales, which is the
// planar layout of a matrix of just those rows.
struct PkPiece {
  const u8 *w[2]; // the planar matrices in global memory; w[1]: up, beside gate
  int n_mats;     // 1, or 2 for gate and up
  int rows, cols; // the whole matrix's shape
  int row_begin, row_end;
  float *out;         // token 0's output row (token t's: t * rows further)
  unsigned shared[2]; // each matrix's copy: its offset in the weight buffer
};
// Q/K/V instructions may span the three matrices.
struct PkPieces {
  int n;
  PkPiece p[3];
};

// Bytes of the copy of `rows` rows of a planar matrix `cols` wide.
template <class T> __device__ __forceinline__ unsigned pk_piece_bytes(int rows, int cols) {
  return (unsigned)rows * (unsigned)(cols / 128) * (T::PAYLOAD + 2);
}

// PK_FUSED: instruction `ins`'s share of KV head ins.end's rows, the head's
// Q rows (its group of query heads), then its K and V rows, counted in units
// and cut evenly into one share per (sequence, key range).
template <class T>
__device__ PkPieces pk_fused_pieces(const PersistentArgs &a, const PkInstr &ins, const PkLayer &L) {
  const PkDims &d = a.dims;
  const int unit = a.unit_rows > 0 ? a.unit_rows : PK_TILE_ROWS;
  const int group = d.n_head / d.n_head_kv, head = ins.end;
  const int q_units = group * d.head_dim / unit, kv_units = d.head_dim / unit;
  const int shares = a.n_sequences * a.attention_splits;
  const int share = ins.begin * a.attention_splits + ins.part;
  const int total = q_units + 2 * kv_units;
  const int begin = share * total / shares, end = (share + 1) * total / shares;
  PkPieces ps;
  ps.n = 0;
  unsigned at = 0;
  // Units [first, first + n) of this head's rows of one matrix, which start
  // at `head_row` of its `rows`.
  const auto add = [&](const u8 *w, int rows, int head_row, int first, int n, float *out) {
    const int lo = begin > first ? begin : first, hi = min(end, first + n);
    if (lo >= hi)
      return;
    PkPiece &p = ps.p[ps.n++];
    p.w[0] = w;
    p.w[1] = 0;
    p.n_mats = 1;
    p.rows = rows;
    p.cols = d.n_embd;
    p.row_begin = head_row + (lo - first) * unit;
    p.row_end = head_row + (hi - first) * unit;
    p.out = out;
    p.shared[0] = at;
    at += pk_piece_bytes<T>(p.row_end - p.row_begin, d.n_embd);
  };
  const int q_rows = d.n_head * d.head_dim, kv_rows = d.n_head_kv * d.head_dim;
  add(L.wq, q_rows, head * group * d.head_dim, 0, q_units, a.q);
  add(L.wk, kv_rows, head * d.head_dim, q_units, kv_units, a.k);
  add(L.wv, kv_rows, head * d.head_dim, q_units + kv_units, kv_units, a.v);
  return ps;
}

// The pieces of a matmul instruction: its units [begin, end) counted over
// the stage's matrices one after another (Q, K, V for the first stage). A
// unit is a 16-row tile, or with balanced shares fewer rows (unit_rows).
template <class T>
__device__ PkPieces pk_pieces(const PersistentArgs &a, const PkInstr &ins, const PkLayer &L) {
  if (ins.op == PK_FUSED)
    return pk_fused_pieces<T>(a, ins, L);
  const PkDims &d = a.dims;
  const int unit = a.unit_rows > 0 ? a.unit_rows : PK_TILE_ROWS;
  PkPieces ps;
  ps.n = 0;
  unsigned at = 0;
  const auto add = [&](const u8 *w0, const u8 *w1, int rows, int cols, int first_unit, float *out) {
    const int n_units = (rows + unit - 1) / unit;
    const int begin = ins.begin > first_unit ? ins.begin : first_unit;
    const int end = min(ins.end, first_unit + n_units);
    if (begin >= end)
      return;
    PkPiece &p = ps.p[ps.n++];
    p.w[0] = w0;
    p.w[1] = w1;
    p.n_mats = w1 != 0 ? 2 : 1;
    p.rows = rows;
    p.cols = cols;
    p.row_begin = (begin - first_unit) * unit;
    p.row_end = min(rows, (end - first_unit) * unit);
    p.out = out;
    for (int m = 0; m < p.n_mats; ++m) {
      p.shared[m] = at;
      at += pk_piece_bytes<T>(p.row_end - p.row_begin, cols);
    }
  };
  const int q_rows = d.n_head * d.head_dim, kv_rows = d.n_head_kv * d.head_dim;
  if (ins.op == PK_QKV) {
    const int q_units = (q_rows + unit - 1) / unit;
    const int kv_units = (kv_rows + unit - 1) / unit;
    add(L.wq, 0, q_rows, d.n_embd, 0, a.q);
    add(L.wk, 0, kv_rows, d.n_embd, q_units, a.k);
    add(L.wv, 0, kv_rows, d.n_embd, q_units + kv_units, a.v);
  } else if (ins.op == PK_OUTPUT) {
    add(L.wo, 0, d.n_embd, q_rows, 0, a.x);
  } else if (ins.op == PK_FFN_UP) {
    add(L.wg, L.wu, d.n_ff, d.n_embd, 0, a.ff);
  } else if (ins.op == PK_FFN_DOWN) {
    add(L.wd, 0, d.n_embd, d.n_ff, 0, a.x);
  } else if (ins.op == PK_HEAD) {
    add(a.head, 0, a.n_vocab, d.n_embd, 0, a.logits);
  }
  return ps;
}

// Where matrix m of a piece keeps the codes and the scales of its rows in
// the planar layout: what pk_fetch_weights copies and pk_prefetch_weights
// asks L2 for.
struct PkWeightSpan {
  const u8 *codes, *scales;
  unsigned code_bytes, scale_bytes;
};
template <class T> __device__ __forceinline__ PkWeightSpan pk_weight_span(const PkPiece &p, int m) {
  const int n_blocks = p.cols / 128, rows = p.row_end - p.row_begin;
  const size_t row_codes = (size_t)n_blocks * T::PAYLOAD;
  PkWeightSpan span;
  span.codes = p.w[m] + (size_t)p.row_begin * row_codes;
  span.scales = p.w[m] + (size_t)p.rows * row_codes + (size_t)p.row_begin * n_blocks * 2;
  span.code_bytes = (unsigned)(rows * row_codes);
  span.scale_bytes = (unsigned)(rows * n_blocks * 2);
  return span;
}

// Starts copying a matmul instruction's weights (its pieces `ps`) into the
// weight buffer (one cp.async group per thread). Weights never change, so
// this runs before the instruction's wait: the copy overlaps the wait for
// the stage before it.
template <class T> __device__ void pk_fetch_weights(const PkPieces &ps, unsigned char *buffer) {
  for (int i = 0; i < ps.n; ++i) {
    const PkPiece &p = ps.p[i];
    for (int m = 0; m < p.n_mats; ++m) {
      const PkWeightSpan span = pk_weight_span<T>(p, m);
      const int code_chunks = (int)(span.code_bytes / 16),
                scale_chunks = (int)(span.scale_bytes / 16);
      unsigned char *const dst = buffer + p.shared[m];
      for (int c = threadIdx.x; c < code_chunks; c += PK_THREADS)
        pk_fetch_codes_16(dst + 16 * (size_t)c, span.codes + 16 * (size_t)c);
      for (int c = threadIdx.x; c < scale_chunks; c += PK_THREADS)
        cp_async_16(dst + 16 * ((size_t)code_chunks + c), span.scales + 16 * (size_t)c);
    }
  }
  cp_async_commit();
}

// persistent_stream: starts copying the weights of instruction `index`
// (when it is in the list and has weights) into `slot`, and commits the
// group either way, so that every instruction of the block owns one group
// and cp.async.wait_group counts instructions.
template <class T>
__device__ void pk_fetch_ahead(const PersistentArgs &a, int index, unsigned char *slot) {
  if (index < a.n_instrs) {
    const PkInstr ins = a.instrs[index];
    if (ins.op != PK_ATTENTION && ins.op != PK_ARGMAX) {
      pk_fetch_weights<T>(pk_pieces<T>(a, ins, a.layers[ins.layer]), slot);
      return;
    }
  }
  cp_async_commit();
}

// Asks L2 for every 128-byte line of a matmul instruction's weights (its
// pieces `ps`: codes and scales of each matrix), spread over the block's
// threads. Issued for the block's next instruction before the wait of this
// one, so that HBM streams the next stage's weights while this stage
// waits and computes.
#define PK_LINE_BYTES 128
__device__ __forceinline__ void pk_prefetch_range(const u8 *begin, size_t bytes) {
  if (bytes == 0)
    return;
  const size_t first = (size_t)begin / PK_LINE_BYTES;
  const size_t lines = ((size_t)begin + bytes - 1) / PK_LINE_BYTES - first + 1;
  for (size_t l = threadIdx.x; l < lines; l += PK_THREADS)
    pk_prefetch_l2((const u8 *)((first + l) * PK_LINE_BYTES));
}
template <class T> __device__ void pk_prefetch_weights(const PkPieces &ps) {
  for (int i = 0; i < ps.n; ++i)
    for (int m = 0; m < ps.p[i].n_mats; ++m) {
      const PkWeightSpan span = pk_weight_span<T>(ps.p[i], m);
      pk_prefetch_range(span.codes, span.code_bytes);
      pk_prefetch_range(span.scales, span.scale_bytes);
    }
}
