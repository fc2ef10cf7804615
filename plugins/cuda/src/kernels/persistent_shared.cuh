// The persistent kernel's dynamic shared memory: a control area, then a
// matmul's staged inputs (and the tensor-core sums) or an attention's
// working set, then the weight buffer the host sizes (persistent_step.cpp
// mirrors these byte counts: kControlBytes, kAttentionBytes).
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
