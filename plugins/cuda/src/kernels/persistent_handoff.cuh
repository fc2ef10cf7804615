// The handoff between instructions: a consumer's thread 0 polls its
// counter (acquire), under a deadline and the launch's abort flag, and the
// block follows its verdict; a producer's threads store, meet at a barrier,
// thread 0 fences (cumulative: the whole block's stores) and adds one to its
// counter. pk_mark notes the trace's times (option persistent_trace).
// Thread 0 waits for the instruction's counter; the block follows its
// verdict. False: the launch is aborting (a wait somewhere timed out).
__device__ bool pk_wait(const PersistentArgs &a, const PkInstr &ins, int index, PkControl *ctl) {
  if (threadIdx.x == 0) {
    pk_note_in_flight();
    int go = 1;
    if (ins.wait_target > 0) {
      const int *counter = a.counters + ins.wait_counter;
      const long long start = pk_clock_ns();
      for (int poll = 1;; ++poll) {
        const int observed = pk_load_acquire(counter);
        if (observed >= ins.wait_target)
          break;
        // The abort flag and the deadline only every PK_POLLS_PER_CHECK
        // polls: the flag's load is another round trip to L2, and a poll
        // behind it would see the counter move that much later.
        if (poll % PK_POLLS_PER_CHECK != 0) {
          pk_pause(counter, ins.wait_target, &a.status->abort, start + a.deadline_ns + 1);
          continue;
        }
        if (pk_load_relaxed(&a.status->abort) != 0) {
          go = 0;
          break;
        }
        if (pk_clock_ns() - start > a.deadline_ns) {
          if (pk_claim(&a.status->abort)) {
            a.status->block = blockIdx.x;
            a.status->instr = index;
            a.status->counter = ins.wait_counter;
            a.status->observed = observed;
            a.status->target = ins.wait_target;
          }
          go = 0;
          break;
        }
        pk_pause(counter, ins.wait_target, &a.status->abort, start + a.deadline_ns + 1);
      }
    }
    ctl->go = go;
  }
  __syncthreads();
  return ctl->go != 0;
}

// Thread 0 notes the time of `point` of instruction `index` when tracing.
__device__ __forceinline__ void pk_mark(const PersistentArgs &a, int index, int point) {
  if (a.trace != 0 && threadIdx.x == 0)
    a.trace[(size_t)index * PK_MARKS + point] = pk_trace_ns();
}

// Publishes the block's stores, then counts the instruction done.
__device__ void pk_done(const PersistentArgs &a, const PkInstr &ins, int index) {
  __syncthreads(); // every thread's stores are made
  pk_mark(a, index, PK_MARK_END);
  if (threadIdx.x == 0) {
#ifndef BONSAI_PK_OMIT_FENCE
    pk_fence();
#endif
    pk_signal(a.counters + ins.signal_counter);
  }
  pk_mark(a, index, PK_MARK_SIGNAL);
}
