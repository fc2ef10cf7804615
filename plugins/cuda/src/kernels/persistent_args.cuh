// The persistent decode kernel's descriptors (persistent.cuh says how the
// kernel works): its limits, the instruction, layer, sequence and stall
// records, and PersistentArgs, the one kernel argument. The host keeps images
// of these byte for byte (persistent_step.cpp, common/persistent_plan.hpp,
// persistent_decode.hpp): a field added here goes there too.
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
// persistent_qkv=fused, instead of PK_QKV and PK_ATTENTION: a share of one KV
// head's Q/K/V rows, then that head's attention of one (sequence, key
// range), signalling PK_ATTENTION's counter.
#define PK_FUSED 7

struct PkInstr {
  int op;    // PK_QKV ... PK_FFN_DOWN
  int layer; // decoder layer
  // Matmuls: units [begin, end) of unit_rows rows (QKV: of Q, K and V
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
  int attention_splits;
  // Rows of a matmul instruction's unit (PkInstr::begin, end): PK_TILE_ROWS,
  // or fewer in a plan of balanced shares (persistent_shares=balanced); 0
  // is PK_TILE_ROWS.
  int unit_rows;
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
  // Option persistent_stream=N (stream_slots = N > 1): the weight buffer is
  // N slots of slot_bytes, and before it waits for an instruction's inputs a
  // block has the weights of its next N - 1 instructions on their way into
  // the other slots (cp.async, a group an instruction), so that they stream
  // while it waits and computes. 1 (or 0): one buffer, filled before each
  // wait for that instruction alone.
  int stream_slots, slot_bytes;
  // persistent_qkv=fused: counters[head_ready_base + layer * n_head_kv + h]
  // counts the shares of KV head h's Q/K/V rows written in a layer (zeroed
  // with the others); 0 in a plan without PK_FUSED.
  int head_ready_base, reserved3;
};
static_assert(sizeof(PersistentArgs) == 544, "persistent_step.cpp's image must match");

// The times a traced instruction notes, in this order.
#define PK_MARK_START 0  // its block took it up (before the weights' copy starts)
#define PK_MARK_GO 1     // its wait ended
#define PK_MARK_READY 2  // inputs staged and weights landed (attention: rows normed and rotated)
#define PK_MARK_END 3    // outputs written, before the fence
#define PK_MARK_SIGNAL 4 // its counter update issued
#define PK_MARKS 5
