// Persistent decode (option decode=persistent): every layer of a step of up
// to PK_MAX_TOKENS tokens in one launch. One block per SM walks an
// instruction list built on the host (persistent_plan.cpp): block b runs
// instructions b, b + gridDim.x, ... in order. An instruction is one piece of
// a layer (a range of 16-row tiles of a matmul, or the attention of one
// sequence and KV head); it waits until a counter in global memory shows that
// the instructions it reads from are done, and adds one to its own counter
// when it is. The list is in dependency order, so the lowest unfinished
// instruction can always run: no deadlock, and no grid-wide barrier.
//
// Weights: a matmul instruction first starts copying its weights (the
// codes and scales of its rows, a few tens of KB) into a buffer in shared
// memory with cp.async, then waits for its inputs, so the copy overlaps the
// wait, and all of it is in flight at once; the row dots then read shared
// memory. With persistent_prefetch=next it also asks L2 for the weights of
// its next matmul instruction before the wait, so that HBM streams a stage
// ahead.
//
// Memory ordering: outputs other blocks read are written with pk_store.
// A producer's threads store, meet at a block barrier, then thread 0 fences
// (cumulative: it publishes the whole block's stores) and adds to the
// counter; a consumer's thread 0 loads the counter with acquire semantics,
// then the block meets at a barrier. The kernel emulator holds a block's
// pk_stores back until that block fences, so a missing fence, a missing wait
// or a wrong count gives wrong numbers there (tests/cuda/persistent_*).
//
// With an LM head (PersistentArgs::n_vocab > 0), the list ends with its
// rows as one more matmul stage after the last layer, which also keeps each
// range's best row per token, and one argmax instruction that picks every
// token's best over the ranges: a greedy step needs no other launch.
//
// With a trace buffer (option persistent_trace), thread 0 notes five times
// per instruction (PK_MARK_*), so that the host can say where a step's time
// goes: waiting, staging inputs, computing, or publishing.
//
// A wait that lasts longer than the launch's deadline (globaltimer) records
// where it stalled in PkStatus and raises its abort flag; every other wait
// sees the flag and the whole grid returns, so a lost update costs one
// deadline, not a hung GPU. The host reads PkStatus after the step.
//
// Needs kernels/int8_input.cuh, kernels/gemv_dp4a.cuh and
// kernels/int8_mma.cuh before it (the int8 records, the dp4a row dots and
// the int8 MMA). Uses dynamic shared memory only: the
// emulator runs the blocks of this kernel concurrently, and a static
// __shared__ array would be one for all of them there.
#define PK_THREADS 256 // = DP4A_WARPS warps
#define PK_WARPS (PK_THREADS / 32)
#define PK_TILE_ROWS (DP4A_WARPS * DP4A_ROWS_PER_WARP) // the plan's tile (kPersistentTileRows)
#define PK_MAX_TOKENS 8
#define PK_MAX_SEQUENCES 8
#define PK_MAX_DIM 128
#define PK_MAX_GROUP 4
#define PK_DIMS_PER_LANE (PK_MAX_DIM / 32)
#define PK_MAX_Q8_GROUPS 128  // 128-value groups of a row at most (persistent_quantize=producer)
#define PK_STAGE_BATCH 4      // input items whose loads a warp issues together
#define PK_KEY_BATCH 4        // attention: keys whose loads a warp issues together
#define PK_POLLS_PER_CHECK 16 // counter polls per look at the abort flag and the deadline

// Instruction kinds; PK_STAGES counters per layer, one per kind.
#define PK_QKV 0       // RMSNorm + Q, K, V rows
#define PK_ATTENTION 1 // QK-norm + RoPE + KV append + attention, one (sequence, KV head)
#define PK_OUTPUT 2    // O rows, added to the residual
#define PK_FFN_UP 3    // RMSNorm + gate and up rows + SiLU product
#define PK_FFN_DOWN 4  // down rows, added to the residual
#define PK_STAGES 5
// After the last layer (their counters follow the layers', PK_STAGES * n_layer + 0 and + 1):
#define PK_HEAD 5   // final RMSNorm + LM head rows: logits, and the range's best row per token
#define PK_ARGMAX 6 // every token's best row over the LM head's ranges

struct PkInstr {
  int op;    // PK_QKV ... PK_FFN_DOWN
  int layer; // decoder layer
  // Matmuls: tiles [begin, end) of PK_TILE_ROWS rows (QKV: of Q, K and V
  // rows one after another). Attention: begin = sequence, end = KV head.
  int begin, end;
  int wait_counter; // counters[wait_counter] must reach wait_target first
  int wait_target;  // 0: no wait (layer 0's first stage)
  int signal_counter;
  int part; // attention: which of the launch's attention_splits key ranges; LM head: its range
};

// One decoder layer's weights (planar Q1_0 or Q2_0, all of one type) and norms.
struct PkLayer {
  const u8 *wq, *wk, *wv, *wo, *wg, *wu, *wd;
  const float *attn_norm, *q_norm, *k_norm, *ffn_norm;
};

// One sequence of the step: tokens [first_token, first_token + n_tokens) of
// the step's rows, appended to its KV cache at kv_length.
struct PkSequence {
  int kv_length, n_tokens, first_token, reserved;
  unsigned long long cache; // the slot's cache: per layer its keys, then its values
};
#define PK_MAX_SPLITS 32 // key ranges per (sequence, KV head) at most

// Where the launch stalled, if it did (zeroed before each launch).
struct PkStatus {
  int abort;    // 1: a wait passed the deadline; every block returns
  int block;    // the block whose wait timed out
  int instr;    // the instruction it waited for (index in the list)
  int counter;  // the counter it waited on
  int observed; // the counter's value then
  int target;   // the value it waited for
  int reserved[2];
};

struct PkDims {
  int n_embd, n_head, n_head_kv, head_dim, n_ff, max_ctx;
  float eps, rope_magnitude;
};

struct PersistentArgs {
  const PkInstr *instrs;
  const PkLayer *layers;
  int *counters; // PK_STAGES per layer, zeroed before each launch
  PkStatus *status;
  float *x, *q, *k, *v, *attn, *ff; // activation rows, one per token of the step
  const double *rope_rates;         // head_dim / 2: pair i turns pos * rate[i]
  unsigned long long layer_bytes;   // bytes of one layer's keys in a cache
  long long deadline_ns;            // longest wait before the launch gives up
  int n_instrs, n_tokens, n_sequences;
  int weights_offset; // where the weight buffer starts in dynamic shared memory (16-aligned)
  PkDims dims;
  PkSequence sequences[PK_MAX_SEQUENCES];
  // Attention split over key ranges (attention_splits > 1): each range's
  // softmax state per token row and query head, [row][head][split] of
  // head_dim + 2 floats (m, l, then the unnormalized sums), and per layer,
  // sequence and KV head how many ranges have written theirs (zeroed before
  // each launch): the last one merges them.
  float *partials;
  int *arrivals; // [layer][PK_MAX_SEQUENCES][n_head_kv]
  int attention_splits, reserved2;
  // PK_MARKS times per instruction (n_instrs of them), or null: no trace.
  unsigned long long *trace;
  // Option persistent_quantize=producer (quantize != 0): whoever completes
  // a 128-row group of a stage's output (the last of its instructions to
  // count its rows there; attention: each output's own instruction)
  // quantizes it for the stage that reads it, whose instructions then copy
  // int8 records instead of each quantizing the whole f32 row. Indexed by
  // the reading stage (PK_QKV, PK_OUTPUT, PK_FFN_UP, PK_FFN_DOWN): each
  // token's staged row, records then offsets as in shared memory
  // (PK_STAGED_ROW_BYTES apart; shared memory pads them), and for PK_QKV
  // and PK_FFN_UP, whose inputs are normed, each token's sums of squares
  // per group (q8_groups apart).
  unsigned char *q8[PK_STAGES];
  float *q8_sumsq[PK_STAGES];
  int *group_rows; // [layer][PK_STAGES][q8_groups]: rows of each output group written (zeroed)
  int quantize, q8_groups, n_layer;
  // Option persistent_matmul=mma (compute capability 8.0+): steps of 2 or
  // more tokens multiply on the int8 tensor cores (pk_piece_rows_mma), with
  // PK_REDUCE_BYTES of shared memory just before the weight buffer.
  int mma;
  // The LM head in the launch (n_vocab > 0): its planar rows (the layers'
  // type) after RMSNorm(x) * output_norm, every token's logits, each
  // range's best row per token as a key (pk_best_key) and the argmax of
  // each token. With persistent_quantize=producer the last layer's down
  // projection quantizes its output for the head into q8[PK_QKV] (which no
  // later Q/K/V reads).
  const u8 *head;
  const float *output_norm;
  float *logits;                 // [token][n_vocab]
  unsigned long long *head_best; // [head range][PK_MAX_TOKENS]
  int *argmax;                   // [token]
  int n_vocab;
  // Option persistent_prefetch=next (prefetch != 0): before its wait, a
  // block also asks L2 for the weights of the next matmul instruction it
  // will run, so that their copy into shared memory after this one reads
  // L2, not HBM.
  int prefetch;
};
static_assert(sizeof(PersistentArgs) == 528, "persistent_step.cpp's image must match");

// The times a traced instruction notes, in this order.
#define PK_MARK_START 0  // its block took it up (before the weights' copy starts)
#define PK_MARK_GO 1     // its wait ended
#define PK_MARK_READY 2  // inputs staged and weights landed (attention: rows normed and rotated)
#define PK_MARK_END 3    // outputs written, before the fence
#define PK_MARK_SIGNAL 4 // its counter update issued
#define PK_MARKS 5

#ifndef BONSAI_KERNEL_EMULATION
__device__ __forceinline__ int pk_load_acquire(const int *p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ int pk_load_relaxed(const int *p) {
  int v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ long long pk_clock_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return (long long)t;
}
__device__ __forceinline__ unsigned long long pk_trace_ns() {
  return (unsigned long long)pk_clock_ns();
}
// Between two polls of a counter: let the other warps of the SM run.
__device__ __forceinline__ void pk_pause(const int *, int, const int *, long long) {
  asm volatile("nanosleep.u32 64;");
}
__device__ __forceinline__ void pk_fence() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
__device__ __forceinline__ void pk_signal(int *p) {
  asm volatile("red.relaxed.gpu.global.add.s32 [%0], 1;" ::"l"(p) : "memory");
}
// True for the one caller that turns *p from 0 to 1.
__device__ __forceinline__ bool pk_claim(int *p) {
  int old;
  asm volatile("atom.relaxed.gpu.global.cas.b32 %0, [%1], 0, 1;" : "=r"(old) : "l"(p) : "memory");
  return old == 0;
}
__device__ __forceinline__ void pk_store(float *p, float v) {
  *p = v;
}
__device__ __forceinline__ void pk_store(u16 *p, u16 v) {
  *p = v;
}
__device__ __forceinline__ void pk_store(u32 *p, u32 v) {
  *p = v;
}
// Adds n and returns the old value, acquiring what the earlier adders
// released (they fenced before adding).
__device__ __forceinline__ int pk_arrive(int *p, int n = 1) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(n)
               : "memory");
  return old;
}
// One 16-byte chunk of weight codes into the weight buffer.
__device__ __forceinline__ void pk_fetch_codes_16(unsigned char *dst, const u8 *src) {
  cp_async_16(dst, src);
}
// Asks L2 for the 128-byte line that holds `p` (no register waits for it).
__device__ __forceinline__ void pk_prefetch_l2(const u8 *p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
#else
inline int pk_load_acquire(const int *p) {
  return *p;
}
inline int pk_load_relaxed(const int *p) {
  return *p;
}
inline long long pk_clock_ns() {
  return emu::virtual_clock_ns();
}
inline unsigned long long pk_trace_ns() { // a tick per read: the order events happened in
  return emu::trace_tick();
}
inline void pk_pause(const int *counter, int target, const int *abort, long long until) {
  emu::wait_for_counter(counter, target, abort, until);
}
inline void pk_fence() {
  emu::release_fence();
}
inline void pk_signal(int *p) {
  emu::add_signal(p);
}
inline bool pk_claim(int *p) {
  if (*p != 0)
    return false;
  *p = 1;
  return true;
}
inline void pk_store(float *p, float v) {
  emu::buffered_store(p, v);
}
inline void pk_store(u16 *p, u16 v) {
  emu::buffered_store(p, v);
}
inline void pk_store(u32 *p, u32 v) {
  emu::buffered_store(p, v);
}
inline int pk_arrive(int *p,
                     int n = 1) { // fibers switch only at waits: no other block runs between
  const int old = *p;
  *p += n;
  return old;
}
inline void pk_fetch_codes_16(unsigned char *dst, const u8 *src) {
  ++emu::weight_loads;         // the tests count how often each chunk is read
  emu::note_weight_fetch(src); // and whether a prefetch asked for it first
  cp_async_16(dst, src);
}
inline void pk_prefetch_l2(const u8 *p) {
  emu::note_prefetch(p);
}
#endif

// The KV cache element as the cache holds it: f16 rounds.
__device__ __forceinline__ float kv_rounded(float v, const float *) {
  return v;
}
__device__ __forceinline__ float kv_rounded(float v, const u16 *) {
  return half_to_float(float_to_half(v));
}
__device__ __forceinline__ void kv_put(float *p, float v) {
  pk_store(p, v);
}
__device__ __forceinline__ void kv_put(u16 *p, float v) {
  pk_store(p, float_to_half(v));
}

// The dynamic shared memory: a control area, then either a matmul's
// quantized input or an attention's working set.
struct PkControl {
  int go;                                   // thread 0's verdict on the wait: 1 run, 0 return
  float partials[PK_WARPS][PK_MAX_TOKENS];  // per-warp sums of squares of each token's input
  float scales[PK_MAX_TOKENS];              // what each token's row dots are multiplied by
  unsigned complete[PK_MAX_Q8_GROUPS / 32]; // producer: the output groups this block completed
};
struct PkAttention {
  float q[PK_MAX_TOKENS][PK_MAX_GROUP][PK_MAX_DIM]; // normed, rotated queries
  float k[PK_MAX_TOKENS][PK_MAX_DIM];               // the step's keys, as cached
  float v[PK_MAX_TOKENS][PK_MAX_DIM];               // the step's values, as cached
  float m[PK_WARPS][PK_MAX_GROUP], l[PK_WARPS][PK_MAX_GROUP];
  float acc[PK_WARPS][PK_MAX_GROUP][PK_MAX_DIM];
  union {
    float out[PK_MAX_TOKENS][PK_MAX_GROUP * PK_MAX_DIM]; // producer: the outputs, to quantize
    struct { // phase 1's constants, read before the wait (phase 2 reuses the bytes)
      float q_norm[PK_MAX_DIM], k_norm[PK_MAX_DIM];
      float cos[PK_MAX_TOKENS][PK_MAX_DIM / 2], sin[PK_MAX_TOKENS][PK_MAX_DIM / 2];
    } rope;
  };
};
static_assert(sizeof(((PkAttention *)0)->rope) <= sizeof(((PkAttention *)0)->out),
              "phase 1's constants must fit in the outputs' bytes (the host's kAttentionBytes)");
#define PK_CONTROL_BYTES 320 // sizeof(PkControl) rounded up to 16 (the host's kControlBytes)
static_assert(sizeof(PkControl) <= PK_CONTROL_BYTES, "the control area outgrew its bytes");
// Bytes of one token's quantized input row of `cols` values (records,
// then offsets; 16-byte aligned), as the producers' rows lie in global memory.
#define PK_STAGED_ROW_BYTES(cols) (Q8_ROW_STRIDE(cols) * 16)
// The distance between two tokens' rows in shared memory: that, padded to
// 16 more than a multiple of 128, so that the same word of eight tokens'
// records lies in eight different banks (the tensor-core path reads one per
// lane, a token per group of four lanes).
#define PK_STAGED_TOKEN_BYTES(cols)                                                                \
  (PK_STAGED_ROW_BYTES(cols) + (144 - PK_STAGED_ROW_BYTES(cols) % 128) % 128)
// persistent_matmul=mma: each warp's partial sums of a 16 x 8 tile of one
// or two matrices, added up across the warps.
#define PK_REDUCE_BYTES (PK_WARPS * 2 * 128 * 4)
// Dynamic shared bytes before the weight buffer (PersistentArgs::
// weights_offset) for steps of n_tokens tokens with inputs of up to
// max_cols values: the control area, then the larger of the staged inputs
// (with the tensor-core path's sums after them) and an attention's working
// set. The weight buffer follows: the host sizes it and cuts the
// instruction list so that every matmul instruction's weights fit.
#define PK_STAGED_BYTES(max_cols, n_tokens, mma)                                                   \
  ((n_tokens)*PK_STAGED_TOKEN_BYTES(max_cols) + ((mma) ? PK_REDUCE_BYTES : 0))
#define PK_SHARED_BYTES(max_cols, n_tokens, mma)                                                   \
  (PK_CONTROL_BYTES + (PK_STAGED_BYTES(max_cols, n_tokens, mma) > sizeof(PkAttention)              \
                           ? PK_STAGED_BYTES(max_cols, n_tokens, mma)                              \
                           : sizeof(PkAttention)))

// A logit and its row as one number whose larger value is the better row:
// the greater logit, then the lower row (as bonsai_argmax picks). NaN is
// below every key of a number, like "none yet" (0): it never wins, and a
// token whose logits are all NaN gets row 0. -0 and +0 are equal.
__device__ __forceinline__ unsigned long long pk_best_key(float value, int row) {
  if (value != value)
    return 0ull;
  const u32 bits = value == 0.0f ? 0u : __float_as_uint(value);
  const u32 ordered = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  return (unsigned long long)ordered << 32 | (unsigned long long)(~(u32)row);
}
__device__ __forceinline__ int pk_best_row(unsigned long long key) {
  return key == 0ull ? 0 : (int)~(u32)(key & 0xffffffffull);
}
__device__ __forceinline__ unsigned long long pk_max_key(unsigned long long a,
                                                         unsigned long long b) {
  return a > b ? a : b;
}
__device__ __forceinline__ unsigned long long warp_max_key(unsigned long long key) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const u32 hi = __shfl_xor_sync(0xffffffffu, (u32)(key >> 32), offset);
    const u32 lo = __shfl_xor_sync(0xffffffffu, (u32)(key & 0xffffffffull), offset);
    key = pk_max_key(key, (unsigned long long)hi << 32 | lo);
  }
  return key;
}

// Thread 0 waits for the instruction's counter; the block follows its
// verdict. False: the launch is aborting (a wait somewhere timed out).
__device__ bool pk_wait(const PersistentArgs &a, const PkInstr &ins, int index, PkControl *ctl) {
  if (threadIdx.x == 0) {
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
// the stage has a norm. The caller waits for the copies.
__device__ void pk_copy_inputs(const PersistentArgs &a, int op, const float *norm, int cols,
                               unsigned char *staged, PkControl *ctl) {
  __syncthreads(); // the previous instruction's staged rows are no longer read
  const int row_chunks = Q8_ROW_STRIDE(cols), chunks = a.n_tokens * row_chunks;
  for (int c = threadIdx.x; c < chunks; c += PK_THREADS) // rows apart in memory, padded here
    cp_async_16(staged + (size_t)(c / row_chunks) * PK_STAGED_TOKEN_BYTES(cols) +
                    16 * (size_t)(c % row_chunks),
                a.q8[op] + 16 * (size_t)c);
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

// The pieces of a matmul instruction: its tiles [begin, end) counted over
// the stage's matrices one after another (Q, K, V for the first stage).
template <class T>
__device__ PkPieces pk_pieces(const PersistentArgs &a, const PkInstr &ins, const PkLayer &L) {
  const PkDims &d = a.dims;
  PkPieces ps;
  ps.n = 0;
  unsigned at = 0;
  const auto add = [&](const u8 *w0, const u8 *w1, int rows, int cols, int first_tile, float *out) {
    const int n_tiles = (rows + PK_TILE_ROWS - 1) / PK_TILE_ROWS;
    const int begin = ins.begin > first_tile ? ins.begin : first_tile;
    const int end = min(ins.end, first_tile + n_tiles);
    if (begin >= end)
      return;
    PkPiece &p = ps.p[ps.n++];
    p.w[0] = w0;
    p.w[1] = w1;
    p.n_mats = w1 != 0 ? 2 : 1;
    p.rows = rows;
    p.cols = cols;
    p.row_begin = (begin - first_tile) * PK_TILE_ROWS;
    p.row_end = min(rows, (end - first_tile) * PK_TILE_ROWS);
    p.out = out;
    for (int m = 0; m < p.n_mats; ++m) {
      p.shared[m] = at;
      at += pk_piece_bytes<T>(p.row_end - p.row_begin, cols);
    }
  };
  const int q_rows = d.n_head * d.head_dim, kv_rows = d.n_head_kv * d.head_dim;
  if (ins.op == PK_QKV) {
    const int q_tiles = (q_rows + PK_TILE_ROWS - 1) / PK_TILE_ROWS;
    const int kv_tiles = (kv_rows + PK_TILE_ROWS - 1) / PK_TILE_ROWS;
    add(L.wq, 0, q_rows, d.n_embd, 0, a.q);
    add(L.wk, 0, kv_rows, d.n_embd, q_tiles, a.k);
    add(L.wv, 0, kv_rows, d.n_embd, q_tiles + kv_tiles, a.v);
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

// Starts copying a matmul instruction's weights (its pieces `ps`) into the
// weight buffer (one cp.async group per thread). Weights never change, so
// this runs before the instruction's wait: the copy overlaps the wait for
// the stage before it.
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

// One piece's rows, on the int8 tensor cores for a step of several tokens
// where persistent_matmul=mma, else with dp4a. `best`: PK_LOGITS's keys.
template <class T, class D, class M, bool HELD, int N_MATS, int KIND>
__device__ void pk_rows(const PersistentArgs &a, const PkPiece &p, const unsigned char *buffer,
                        const unsigned char *staged, const PkControl *ctl,
                        unsigned long long *best) {
  if (a.mma != 0 && a.n_tokens > 1)
    pk_piece_rows_mma<T, M, N_MATS, KIND>(a, p, buffer, staged, ctl,
                                          (float *)(buffer - PK_REDUCE_BYTES), best);
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

// The LM head instruction's best row of each token, from every thread's
// keys (`best`), into its range's slots of head_best. `scratch`: shared
// memory the rows no longer read (PK_WARPS x PK_MAX_TOKENS keys).
__device__ void pk_publish_best(const PersistentArgs &a, const PkInstr &ins,
                                const unsigned long long *best, unsigned long long *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();                          // every warp is done with the staged rows
  for (int t = 0; t < PK_MAX_TOKENS; ++t) { // a constant bound: best stays put
    if (t >= a.n_tokens)
      continue;
    const unsigned long long key = warp_max_key(best[t]);
    if (lane == 0)
      scratch[warp * PK_MAX_TOKENS + t] = key;
  }
  __syncthreads();
  if ((int)threadIdx.x < a.n_tokens) {
    unsigned long long key = 0;
    for (int w = 0; w < PK_WARPS; ++w)
      key = pk_max_key(key, scratch[w * PK_MAX_TOKENS + threadIdx.x]);
    u32 *const slot = (u32 *)(a.head_best + (size_t)ins.part * PK_MAX_TOKENS + threadIdx.x);
    pk_store(slot, (u32)(key & 0xffffffffull));
    pk_store(slot + 1, (u32)(key >> 32));
  }
}

// The argmax instruction, after every LM head range has signalled: warp t
// picks token t's best over the ranges' keys (its wait's target is their
// count).
__device__ void pk_argmax(const PersistentArgs &a, const PkInstr &ins) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  static_assert(PK_MAX_TOKENS <= PK_WARPS, "a warp per token");
  if (warp >= a.n_tokens) // the same for the whole warp
    return;
  unsigned long long key = 0;
  for (int r = lane; r < ins.wait_target; r += 32) {
    const u32 *const slot = (const u32 *)(a.head_best + (size_t)r * PK_MAX_TOKENS + warp);
    key = pk_max_key(key, (unsigned long long)slot[1] << 32 | slot[0]);
  }
  key = warp_max_key(key);
  if (lane == 0)
    pk_store((u32 *)(a.argmax + warp), (u32)pk_best_row(key));
}

// A matmul instruction after its wait: every token's input row (times the
// stage's norm and 1/rms where it has one) staged once, its weights landed,
// then each piece.
template <class T, class D, class M, bool HELD>
__device__ void pk_matmul(const PersistentArgs &a, const PkInstr &ins, int index, const PkLayer &L,
                          const PkPieces &ps, unsigned char *staged, const unsigned char *buffer,
                          PkControl *ctl) {
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
  cp_async_wait<0>();
  __syncthreads(); // every thread's copies have landed
  pk_mark(a, index, PK_MARK_READY);
  if (ins.op == PK_HEAD) {
    unsigned long long best[PK_MAX_TOKENS];
    for (int t = 0; t < PK_MAX_TOKENS; ++t)
      best[t] = 0;
    for (int i = 0; i < ps.n; ++i)
      pk_rows<T, D, M, HELD, 1, PK_LOGITS>(a, ps.p[i], buffer, staged, ctl, best);
    pk_publish_best(a, ins, best, (unsigned long long *)staged);
    return;
  }
  for (int i = 0; i < ps.n; ++i) {
    if (ins.op == PK_FFN_UP)
      pk_rows<T, D, M, HELD, 2, PK_SWIGLU>(a, ps.p[i], buffer, staged, ctl, 0);
    else if (ins.op == PK_QKV)
      pk_rows<T, D, M, HELD, 1, PK_SET>(a, ps.p[i], buffer, staged, ctl, 0);
    else
      pk_rows<T, D, M, HELD, 1, PK_ADD>(a, ps.p[i], buffer, staged, ctl, 0);
  }
  // The last layer's down projection quantizes for the LM head, when there is one.
  const bool read_later = !(ins.op == PK_FFN_DOWN && ins.layer == a.n_layer - 1) || a.n_vocab > 0;
  if (a.quantize != 0 && ins.op != PK_QKV && read_later)
    pk_publish_groups(a, ins, ps.p[0], ctl);
}

// Before an attention instruction's wait, since nothing in it depends on
// the stage before: the QK-norm weights and the rotation of each of the
// sequence's step tokens, into shared memory. Phase 1 after the wait then
// loads only the Q/K/V rows; the norm weights and the rotation rates were
// two more L2 round trips on the critical path, after the reduction.
__device__ void pk_attention_constants(const PersistentArgs &a, const PkInstr &ins,
                                       PkAttention *s) {
  if (ins.begin >= a.n_sequences)
    return;
  const PkSequence &sq = a.sequences[ins.begin];
  const PkLayer &L = a.layers[ins.layer];
  const int hd = a.dims.head_dim, half = hd / 2;
  for (int i = threadIdx.x; i < hd; i += PK_THREADS) {
    s->rope.q_norm[i] = L.q_norm[i];
    s->rope.k_norm[i] = L.k_norm[i];
  }
  for (int at = threadIdx.x; at < sq.n_tokens * half; at += PK_THREADS) {
    const int t = at / half, i = at % half;
    const double theta = (double)(sq.kv_length + t) * a.rope_rates[i];
    s->rope.cos[t][i] = (float)(a.dims.rope_magnitude * cos(theta));
    s->rope.sin[t][i] = (float)(a.dims.rope_magnitude * sin(theta));
  }
}

// Phase 1 of an attention instruction: warp-sized items, each one head row
// of one token: RMSNorm with its norm weight, then NEOX RoPE by the token's
// rotation (pk_attention_constants), into `dst` (shared). Keys also go to
// the cache, as cached.
template <class KV>
__device__ void pk_norm_rope(const float *src, const float *norm, float *dst, const float *cos_t,
                             const float *sin_t, const PersistentArgs &a, KV *cache_row) {
  const int lane = threadIdx.x % 32, hd = a.dims.head_dim, half = hd / 2;
  float ss = 0.0f;
  for (int i = lane; i < hd; i += 32)
    ss += src[i] * src[i];
  const float inv = 1.0f / sqrtf(warp_sum(ss) / (float)hd + a.dims.eps);
  for (int i = lane; i < hd; i += 32)
    dst[i] = src[i] * inv * norm[i];
  __syncwarp();
  for (int i = lane; i < half; i += 32) {
    const float c = cos_t[i], s = sin_t[i];
    const float x0 = dst[i], x1 = dst[i + half];
    float r0 = x0 * c - x1 * s, r1 = x0 * s + x1 * c;
    if (cache_row != 0) {
      r0 = kv_rounded(r0, cache_row), r1 = kv_rounded(r1, cache_row);
      kv_put(cache_row + i, r0);
      kv_put(cache_row + i + half, r1);
    }
    dst[i] = r0;
    dst[i + half] = r1;
  }
  __syncwarp();
}

// persistent_quantize=producer: one (sequence, KV head)'s finished
// outputs, from shared memory, quantized group by group into the output
// projection's staged rows (its group x head_dim columns are whole groups:
// the host checks).
__device__ void pk_quantize_attention(const PersistentArgs &a, const PkSequence &sq, int head,
                                      const PkAttention *s) {
  if (a.quantize == 0)
    return;
  __syncthreads(); // the outputs are in shared memory
  const PkDims &d = a.dims;
  const int lane = threadIdx.x % 32, per_head = d.n_head / d.n_head_kv * d.head_dim / 128;
  for (int item = threadIdx.x / 32; item < sq.n_tokens * per_head; item += PK_WARPS) {
    const int t = item / per_head, k = item % per_head;
    const float *const v = &s->out[t][k * 128 + 4 * lane];
    pk_put_group(a, PK_OUTPUT, d.n_head * d.head_dim, sq.first_token + t, head * per_head + k, v[0],
                 v[1], v[2], v[3], 0);
  }
}

// One sequence and KV head, or one range of its keys (attention_splits >
// 1): its tokens' queries (the group's heads) and key normed and rotated,
// keys and values appended to the cache (by range 0), then causal attention
// over the range's cached keys and, in the last range, the step's own keys
// (from shared memory: the cache writes are not read back, they are for
// later steps). Split, each range writes its softmax state and the last
// range to finish merges them.
template <class KV>
__device__ void pk_attention(const PersistentArgs &a, const PkInstr &ins, int index, PkAttention *s,
                             PkControl *ctl) {
  const int seq = ins.begin, head = ins.end, split = ins.part, splits = a.attention_splits;
  if (seq >= a.n_sequences) {
    pk_mark(a, index, PK_MARK_READY);
    return;
  }
  const PkSequence sq = a.sequences[seq];
  const PkDims &d = a.dims;
  const int hd = d.head_dim, group = d.n_head / d.n_head_kv;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const size_t q_width = (size_t)d.n_head * hd, kv_width = (size_t)d.n_head_kv * hd;
  const unsigned long long layer_base =
      sq.cache + 2 * a.layer_bytes * (unsigned long long)ins.layer;
  KV *const keys = (KV *)layer_base + (size_t)head * d.max_ctx * hd;
  KV *const values = (KV *)(layer_base + a.layer_bytes) + (size_t)head * d.max_ctx * hd;
  const bool appends = split == 0, last = split == splits - 1;

  // Phase 1: (group + 2) items per token: the queries, the key, the value.
  const int per_token = group + 2;
  for (int item = warp; item < sq.n_tokens * per_token; item += PK_WARPS) {
    const int t = item / per_token, j = item % per_token;
    const int row = sq.first_token + t, pos = sq.kv_length + t;
    if (j < group) {
      pk_norm_rope<KV>(a.q + row * q_width + (size_t)(head * group + j) * hd, s->rope.q_norm,
                       s->q[t][j], s->rope.cos[t], s->rope.sin[t], a, (KV *)0);
    } else if (j == group) {
      pk_norm_rope<KV>(a.k + row * kv_width + (size_t)head * hd, s->rope.k_norm, s->k[t],
                       s->rope.cos[t], s->rope.sin[t], a,
                       appends ? keys + (size_t)pos * hd : (KV *)0);
    } else {
      const float *src = a.v + row * kv_width + (size_t)head * hd;
      for (int i = lane; i < hd; i += 32) {
        const float value = kv_rounded(src[i], values);
        s->v[t][i] = value;
        if (appends)
          kv_put(values + (size_t)pos * hd + i, value);
      }
    }
  }
  __syncthreads();
  pk_mark(a, index, PK_MARK_READY);

  // This range's cached keys [lo, hi); the last range also takes the step's.
  const int chunk = (sq.kv_length + splits - 1) / splits;
  const int lo = min(sq.kv_length, split * chunk), hi = min(sq.kv_length, lo + chunk);

  // Phase 2, per token: warps take the keys in turn, PK_KEY_BATCH at a time,
  // each keeping an online softmax per query head; the warps' states are
  // combined at the end.
  const float scale = 1.0f / sqrtf((float)hd);
  for (int t = 0; t < sq.n_tokens; ++t) {
    const int n_keys = (hi - lo) + (last ? t + 1 : 0);
    float m[PK_MAX_GROUP], l[PK_MAX_GROUP], acc[PK_MAX_GROUP][PK_DIMS_PER_LANE];
    for (int g = 0; g < PK_MAX_GROUP; ++g) {
      m[g] = BONSAI_NEG_INF;
      l[g] = 0.0f;
      for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
        acc[g][r] = 0.0f;
    }
    // A warp takes PK_KEY_BATCH keys at a time (PK_WARPS apart, so that a
    // short range still spreads over every warp) and issues all their loads
    // before it uses any: the cache comes from DRAM or L2, and one key in
    // flight per warp left long contexts waiting on latency.
    for (int first = warp; first < n_keys; first += PK_WARPS * PK_KEY_BATCH) {
      float kv[PK_KEY_BATCH][PK_DIMS_PER_LANE], vv[PK_KEY_BATCH][PK_DIMS_PER_LANE];
      BONSAI_UNROLL
      for (int u = 0; u < PK_KEY_BATCH; ++u) {
        const int idx = first + u * PK_WARPS;
        const bool real = idx < n_keys, cached = idx < hi - lo;
        const int j = cached ? lo + idx : idx - (hi - lo); // a cache position, or a step token
        BONSAI_UNROLL
        for (int r = 0; r < PK_DIMS_PER_LANE; ++r) {
          const int dim = lane + 32 * r;
          const bool in = real && dim < hd;
          kv[u][r] = !in ? 0.0f : cached ? kv_load(keys, (size_t)j * hd + dim) : s->k[j][dim];
          vv[u][r] = !in ? 0.0f : cached ? kv_load(values, (size_t)j * hd + dim) : s->v[j][dim];
        }
      }
      BONSAI_UNROLL
      for (int g = 0; g < PK_MAX_GROUP; ++g) {
        if (g >= group)
          continue;
        float score[PK_KEY_BATCH], batch_max = BONSAI_NEG_INF;
        BONSAI_UNROLL
        for (int u = 0; u < PK_KEY_BATCH; ++u) {
          float partial = 0.0f;
          for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
            if (lane + 32 * r < hd)
              partial += s->q[t][g][lane + 32 * r] * kv[u][r];
          const float dot = warp_sum(partial) * scale; // every lane: the sum is warp-wide
          score[u] = first + u * PK_WARPS < n_keys ? dot : BONSAI_NEG_INF;
          batch_max = fmaxf(batch_max, score[u]);
        }
        const float m_new = fmaxf(m[g], batch_max);  // finite: the batch's first key is real
        const float correction = expf(m[g] - m_new); // 0 for the warp's first batch
        float added = 0.0f;
        for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
          acc[g][r] *= correction;
        BONSAI_UNROLL
        for (int u = 0; u < PK_KEY_BATCH; ++u) {
          const float p = expf(score[u] - m_new); // 0 past the last key
          added += p;
          for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
            acc[g][r] += p * vv[u][r];
        }
        l[g] = l[g] * correction + added;
        m[g] = m_new;
      }
    }
    for (int g = 0; g < PK_MAX_GROUP; ++g) { // a constant bound: the arrays stay in registers
      if (g >= group)
        continue;
      if (lane == 0) {
        s->m[warp][g] = m[g];
        s->l[warp][g] = l[g];
      }
      for (int r = 0; r < PK_DIMS_PER_LANE; ++r)
        if (lane + 32 * r < hd)
          s->acc[warp][g][lane + 32 * r] = acc[g][r];
    }
    __syncthreads();
    const int row = sq.first_token + t;
    for (int at = threadIdx.x; at < group * hd; at += PK_THREADS) {
      const int g = at / hd, i = at % hd;
      float m_max = BONSAI_NEG_INF;
      for (int w = 0; w < PK_WARPS; ++w)
        m_max = fmaxf(m_max, s->m[w][g]);
      float l_sum = 0.0f, sum = 0.0f;
      if (m_max != BONSAI_NEG_INF) // a range without keys has nothing to add
        for (int w = 0; w < PK_WARPS; ++w) {
          const float weight = expf(s->m[w][g] - m_max); // 0 for a warp without keys
          l_sum += s->l[w][g] * weight;
          sum += s->acc[w][g][i] * weight;
        }
      if (splits == 1 && a.quantize != 0) {
        s->out[t][at] = sum / l_sum;
      } else if (splits == 1) {
        pk_store(a.attn + (size_t)row * q_width + (size_t)head * group * hd + at, sum / l_sum);
      } else {
        float *const state =
            a.partials + (((size_t)row * d.n_head + head * group + g) * splits + split) * (hd + 2);
        if (i == 0) {
          pk_store(state, m_max);
          pk_store(state + 1, l_sum);
        }
        pk_store(state + 2 + i, sum);
      }
    }
    __syncthreads(); // the states are rewritten for the next token
  }
  if (splits == 1) {
    pk_quantize_attention(a, sq, head, s);
    return;
  }

  // The last range to arrive merges every range's state into the output.
  if (threadIdx.x == 0) {
    pk_fence(); // publishes this block's states before the count says so
    int *const arrivals =
        a.arrivals + ((size_t)ins.layer * PK_MAX_SEQUENCES + seq) * d.n_head_kv + head;
    ctl->go = pk_arrive(arrivals) == splits - 1;
  }
  __syncthreads();
  if (!ctl->go)
    return;
  for (int at = threadIdx.x; at < sq.n_tokens * group * hd; at += PK_THREADS) {
    const int t = at / (group * hd), g = at / hd % group, i = at % hd;
    const int row = sq.first_token + t;
    const float *const states =
        a.partials + ((size_t)row * d.n_head + head * group + g) * splits * (hd + 2);
    float m_max = BONSAI_NEG_INF;
    for (int r = 0; r < splits; ++r)
      m_max = fmaxf(m_max, states[r * (hd + 2)]);
    float l_sum = 0.0f, sum = 0.0f;
    for (int r = 0; r < splits; ++r) {
      const float *const state = states + r * (hd + 2);
      const float weight = state[0] == BONSAI_NEG_INF ? 0.0f : expf(state[0] - m_max);
      l_sum += state[1] * weight;
      sum += state[2 + i] * weight;
    }
    if (a.quantize != 0)
      s->out[t][g * hd + i] = sum / l_sum;
    else
      pk_store(a.attn + (size_t)row * q_width + (size_t)head * group * hd + g * hd + i,
               sum / l_sum);
  }
  pk_quantize_attention(a, sq, head, s);
}

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
  PkInstr next = (int)blockIdx.x < a.n_instrs ? a.instrs[blockIdx.x] : PkInstr{};
  for (int index = blockIdx.x; index < a.n_instrs; index += gridDim.x) {
    const PkInstr ins = next;
    if (index + (int)gridDim.x < a.n_instrs)
      next = a.instrs[index + gridDim.x];
    const PkLayer &L = a.layers[ins.layer];
    pk_mark(a, index, PK_MARK_START);
    PkPieces ps;
    ps.n = 0;
    if (ins.op != PK_ATTENTION) {
      ps = pk_pieces<T>(a, ins, L);
      pk_fetch_weights<T>(ps, weights);
    } else {
      pk_attention_constants(a, ins, (PkAttention *)work);
    }
    // The next instruction's weights, toward L2 while this one waits.
    if (a.prefetch != 0 && index + (int)gridDim.x < a.n_instrs && next.op != PK_ATTENTION &&
        next.op != PK_ARGMAX)
      pk_prefetch_weights<T>(pk_pieces<T>(a, next, a.layers[next.layer]));
    if (!pk_wait(a, ins, index, ctl)) {
      cp_async_wait<0>(); // no copy may outlive the block
      return;
    }
    pk_mark(a, index, PK_MARK_GO);
    if (ins.op == PK_ATTENTION) {
      pk_attention<KV>(a, ins, index, (PkAttention *)work, ctl);
    } else if (ins.op == PK_ARGMAX) {
      pk_mark(a, index, PK_MARK_READY);
      pk_argmax(a, ins);
    } else {
      pk_matmul<T, D, M, HELD>(a, ins, index, L, ps, work, weights, ctl);
    }
    pk_done(a, ins, index);
  }
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
