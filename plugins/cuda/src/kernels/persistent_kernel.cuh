// The instruction loop every block runs, and the kernels' entry points.
// HELD: the held-records kernels (persistent_records=registers), whose
// single-token steps multiply with pk_piece_rows_held. A kernel of their
// own, not a branch: its registers would be every launch's.
template <class T, class D, class M, class KV, bool HELD>
__device__ void decode_persistent(const PersistentArgs &a) {
  grid_entry();
  BONSAI_DYNAMIC_SHARED(U32x4, pk_shared);
  PkControl *const ctl = (PkControl *)pk_shared;
  unsigned char *const work = (unsigned char *)pk_shared + PK_CONTROL_BYTES;
  unsigned char *const weights = (unsigned char *)pk_shared + a.weights_offset;
  // The block's next instruction is loaded one instruction ahead, and a
  // matmul's pieces are worked out once, before its wait: after the wait the
  // acquire has emptied L1, and working them out again was a chain of L2
  // round trips (the instruction, then its layer's pointers) on the critical
  // path (ncu, 2026-11-28: at one token, stack stores waiting on such loads
  // took about a fifth of the stall samples; with this, an 8B layer at one
  // token took 56.1 us instead of 61.8 on an H200).
  //
  // persistent_stream (slots > 1): the block's j-th instruction has its
  // weights in slot j % slots; those of the next slots - 1 are on their way
  // before it waits (the first ones from before the loop), and each
  // iteration starts the copy of the one slots - 1 ahead into the slot the
  // last instruction freed.
  const int slots = a.stream_slots > 1 ? a.stream_slots : 1;
  float *const reduce = (float *)(weights - PK_REDUCE_BYTES);
  for (int j = 0; j + 1 < slots; ++j)
    pk_fetch_ahead<T>(a, blockIdx.x + j * gridDim.x, weights + (size_t)j * a.slot_bytes);
  PkInstr next = (int)blockIdx.x < a.n_instrs ? a.instrs[blockIdx.x] : PkInstr{};
  for (int index = blockIdx.x, j = 0; index < a.n_instrs; index += gridDim.x, ++j) {
    const PkInstr ins = next;
    if (index + (int)gridDim.x < a.n_instrs)
      next = a.instrs[index + gridDim.x];
    const PkLayer &L = a.layers[ins.layer];
    unsigned char *const buffer = weights + (size_t)(j % slots) * a.slot_bytes;
    pk_mark(a, index, PK_MARK_START);
    PkPieces ps;
    ps.n = 0;
    if (ins.op != PK_ATTENTION) {
      ps = pk_pieces<T>(a, ins, L);
      if (slots == 1)
        pk_fetch_weights<T>(ps, weights);
    } else {
      pk_attention_constants(a, ins, (PkAttention *)work);
    }
    if (slots > 1)
      pk_fetch_ahead<T>(a, index + (slots - 1) * (int)gridDim.x,
                        weights + (size_t)((j + slots - 1) % slots) * a.slot_bytes);
    // The next instruction's weights, toward L2 while this one waits.
    if (a.prefetch != 0 && index + (int)gridDim.x < a.n_instrs && next.op != PK_ATTENTION &&
        next.op != PK_ARGMAX)
      pk_prefetch_weights<T>(pk_pieces<T>(a, next, a.layers[next.layer]));
    if (!pk_wait(a, ins, index, ctl)) {
      cp_async_wait<0>(); // no copy may outlive the block
      return;
    }
    pk_mark(a, index, PK_MARK_GO);
    // One call site each for the matmul and the attention, which PK_FUSED
    // runs one after the other (a second inlined copy of either cost 20 %
    // more code and, in the held-records kernels, 255 registers).
    if (ins.op == PK_ARGMAX) {
      pk_mark(a, index, PK_MARK_READY);
      pk_argmax(a, ins);
    } else {
      if (ins.op != PK_ATTENTION) {
        PkInstr rows = ins;
        if (ins.op == PK_FUSED)
          rows.op = PK_QKV; // its inputs, norm and outputs are Q/K/V's
        pk_matmul<T, D, M, HELD>(a, rows, index, L, ps, work, buffer, reduce, ctl);
        if (ins.op == PK_FUSED && !pk_fused_handoff(a, ins, index, work, ctl))
          return; // the launch is aborting (its copies have landed)
      }
      if (ins.op == PK_ATTENTION || ins.op == PK_FUSED)
        pk_attention<KV>(a, ins, index, (PkAttention *)work, ctl);
    }
    pk_done(a, ins, index);
  }
  cp_async_wait<0>(); // the groups committed for instructions past the list are empty
}

// PREFIX##SUFFIX for an f32 KV cache, PREFIX##SUFFIX##_f16 for an f16 one.
// The held-records kernels are a program of their own
// (bonsai_decode_persistent_held.cu, which defines BONSAI_PK_HELD_RECORDS),
// so that a context without the option does not compile them.
#define BONSAI_PERSISTENT_KERNELS(prefix, suffix, held, Type, Dp4a, Mmq)                           \
  extern "C" __global__ void prefix##suffix(PersistentArgs a) {                                    \
    decode_persistent<Type, Dp4a, Mmq, float, held>(a);                                            \
  }                                                                                                \
  extern "C" __global__ void prefix##suffix##_f16(PersistentArgs a) {                              \
    decode_persistent<Type, Dp4a, Mmq, u16, held>(a);                                              \
  }
#ifdef BONSAI_PK_HELD_RECORDS
BONSAI_PERSISTENT_KERNELS(bonsai_decode_persistent_held_, q1_0, true, TypeQ1_0, Dp4aQ1_0, MmqQ1_0)
BONSAI_PERSISTENT_KERNELS(bonsai_decode_persistent_held_, q2_0, true, TypeQ2_0, Dp4aQ2_0, MmqQ2_0)
#else
BONSAI_PERSISTENT_KERNELS(bonsai_decode_persistent_, q1_0, false, TypeQ1_0, Dp4aQ1_0, MmqQ1_0)
BONSAI_PERSISTENT_KERNELS(bonsai_decode_persistent_, q2_0, false, TypeQ2_0, Dp4aQ2_0, MmqQ2_0)
#endif
