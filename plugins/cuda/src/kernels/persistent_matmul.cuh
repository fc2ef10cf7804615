// A matmul instruction after its wait: its inputs staged, its weights
// landed, each piece's rows on the path the step takes, then the producer's
// quantization for the stage that reads them (or, for the LM head, the
// range's best rows).
// One piece's rows, on the int8 tensor cores for a step of several tokens
// where persistent_matmul=mma, else with dp4a. `best`: PK_LOGITS's keys.
// `reduce`: the MMA's sums (PK_REDUCE_BYTES before the weight buffer).
template <class T, class D, class M, bool HELD, int N_MATS, int KIND>
__device__ void pk_rows(const PersistentArgs &a, const PkPiece &p, const unsigned char *buffer,
                        const unsigned char *staged, const PkControl *ctl, float *reduce,
                        unsigned long long *best) {
  if (a.mma != 0 && a.n_tokens > 1)
    pk_piece_rows_mma<T, M, N_MATS, KIND>(a, p, buffer, staged, ctl, reduce, best);
  // One token: its own compact loop (looping over 8 tokens' code, the
  // i-cache missed at every absent token's branch: 17.8 % of the stall
  // samples on an H200), or in the held-records kernels
  // (persistent_records=registers) with the records in registers.
  // (The LM head keeps its best rows as the rows are written: not there.)
  else if (a.n_tokens == 1 && HELD && KIND != PK_LOGITS)
    pk_piece_rows_held<T, D, N_MATS, KIND>(p, buffer, staged, ctl);
  else if (a.n_tokens == 1)
    pk_piece_rows<T, D, N_MATS, KIND, 1>(a, p, buffer, staged, ctl, best);
  else
    pk_piece_rows<T, D, N_MATS, KIND, PK_MAX_TOKENS>(a, p, buffer, staged, ctl, best);
}

// Waits for the current instruction's weights: every copy in flight with
// one buffer; with `slots` of them, all but the slots - 1 later
// instructions' groups (committed after its own).
__device__ __forceinline__ void pk_wait_weights(int slots) {
  if (slots == 4)
    cp_async_wait<3>();
  else if (slots == 3)
    cp_async_wait<2>();
  else if (slots == 2)
    cp_async_wait<1>();
  else
    cp_async_wait<0>();
}

// A matmul instruction after its wait: every token's input row (times the
// stage's norm and 1/rms where it has one) staged once, its weights landed
// (in `buffer`, the block's weight buffer or its slot), then each piece.
template <class T, class D, class M, bool HELD>
__device__ void pk_matmul(const PersistentArgs &a, const PkInstr &ins, int index, const PkLayer &L,
                          const PkPieces &ps, unsigned char *staged, const unsigned char *buffer,
                          float *reduce, PkControl *ctl) {
  const PkDims &d = a.dims;
  const float *in = ins.op == PK_OUTPUT ? a.attn : ins.op == PK_FFN_DOWN ? a.ff : a.x;
  const float *norm = ins.op == PK_QKV      ? L.attn_norm
                      : ins.op == PK_FFN_UP ? L.ffn_norm
                      : ins.op == PK_HEAD   ? a.output_norm
                                            : 0;
  const int cols = ins.op == PK_OUTPUT     ? d.n_head * d.head_dim
                   : ins.op == PK_FFN_DOWN ? d.n_ff
                                           : d.n_embd;
  // Layer 0's Q/K/V read the embeddings, which no instruction wrote; the
  // LM head reads what the last down projection quantized into Q/K/V's rows.
  if (a.quantize != 0 && !(ins.op == PK_QKV && ins.layer == 0))
    pk_copy_inputs(a, ins.op == PK_HEAD ? PK_QKV : ins.op, norm, cols, staged, ctl);
  else
    pk_stage_inputs(in, norm, d.eps, cols, a.n_tokens, staged, ctl);
  pk_wait_weights(a.stream_slots);
  __syncthreads(); // every thread's copies have landed
  pk_mark(a, index, PK_MARK_READY);
  if (ins.op == PK_HEAD) {
    unsigned long long best[PK_MAX_TOKENS];
    for (int t = 0; t < PK_MAX_TOKENS; ++t)
      best[t] = 0;
    for (int i = 0; i < ps.n; ++i)
      pk_rows<T, D, M, HELD, 1, PK_LOGITS>(a, ps.p[i], buffer, staged, ctl, reduce, best);
    pk_publish_best(a, ins, best, (unsigned long long *)staged);
    return;
  }
  for (int i = 0; i < ps.n; ++i) {
    if (ins.op == PK_FFN_UP)
      pk_rows<T, D, M, HELD, 2, PK_SWIGLU>(a, ps.p[i], buffer, staged, ctl, reduce, 0);
    else if (ins.op == PK_QKV)
      pk_rows<T, D, M, HELD, 1, PK_SET>(a, ps.p[i], buffer, staged, ctl, reduce, 0);
    else
      pk_rows<T, D, M, HELD, 1, PK_ADD>(a, ps.p[i], buffer, staged, ctl, reduce, 0);
  }
  // The last layer's down projection quantizes for the LM head, when there is one.
  const bool read_later = !(ins.op == PK_FFN_DOWN && ins.layer == a.n_layer - 1) || a.n_vocab > 0;
  if (a.quantize != 0 && ins.op != PK_QKV && read_later)
    pk_publish_groups(a, ins, ps.p[0], ctl);
}
