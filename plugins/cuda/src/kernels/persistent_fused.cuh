// persistent_qkv=fused (PK_FUSED): one instruction computes a share of a KV
// head's Q/K/V rows (a Q/K/V matmul instruction of fewer rows, its weights
// copied before its wait as any), publishes them to that head's other
// shares through the head's ready counter, waits until every share has,
// then runs the head's attention of its (sequence, key range) as an
// attention instruction would (the instruction loop, persistent_kernel.cuh,
// runs the matmul, this handoff, then the attention). Between Q/K/V and
// attention there is then no stage-wide handoff: a head's attention waits
// for its own rows only. The plan keeps every share of a layer resident at
// once (no more of them than blocks, persistent_fused_applies), so that a
// share never waits for one its own block has yet to run.

// After the share's rows: counts them into the head's ready counter, waits
// for the head's other shares, then lays out the attention's constants in
// `work` (the staged inputs are read no more). False: the launch is
// aborting (no copy left in flight).
__device__ bool pk_fused_handoff(const PersistentArgs &a, const PkInstr &ins, int index,
                                 unsigned char *work, PkControl *ctl) {
  const int counter = a.head_ready_base + ins.layer * a.dims.n_head_kv + ins.end;
  __syncthreads(); // every thread's rows are written
  if (threadIdx.x == 0) {
#ifndef BONSAI_PK_OMIT_FENCE
    pk_fence(); // publishes them before the count says so
#endif
    pk_signal(a.counters + counter);
  }
  PkInstr ready = ins;
  ready.wait_counter = counter;
  ready.wait_target = a.n_sequences * a.attention_splits;
  if (!pk_wait(a, ready, index, ctl)) {
    cp_async_wait<0>();
    return false;
  }
  pk_attention_constants(a, ins, (PkAttention *)work);
  __syncthreads();
  return true;
}
