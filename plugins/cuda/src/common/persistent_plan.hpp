#pragma once
// The instruction list of the persistent decode kernel
// (kernels/persistent.cuh), built on the host once per model and number of
// sequences. Pure: no device, so its rules are tested directly.
#include <cstdint>
#include <string>
#include <vector>

namespace bonsai::cuda {

// The stages of a layer, in order; each has one counter per layer
// (PK_QKV ... PK_FFN_DOWN of kernels/persistent_args.cuh).
enum class PersistentStage : int32_t {
  qkv = 0,       // RMSNorm + Q, K, V rows
  attention = 1, // one (sequence, KV head[, key range]): QK-norm, RoPE, KV append, attention
  output = 2,    // O rows added to the residual
  ffn_up = 3,    // RMSNorm + gate and up rows, SiLU product
  ffn_down = 4,  // down rows added to the residual
  // After the last layer, where the plan has an LM head (PersistentShape::
  // n_vocab > 0): its instructions carry the last layer's index, and their
  // counters are the ones after the layers' (persistent_head_counter).
  head = 5,   // final RMSNorm + LM head rows: logits, and each range's best row per token
  argmax = 6, // one instruction: every token's best row over the head's ranges
  // persistent_qkv=fused: a share of one KV head's Q, K and V rows, then,
  // once every share of that head is written, the attention of one
  // (sequence, KV head, key range); it signals the attention counter (the
  // layer has no Q/K/V stage of its own).
  qkv_attention = 7,
};
inline constexpr int kPersistentStages = 5;    // counters per layer (the stages qkv ... ffn_down)
inline constexpr int kPersistentTileRows = 16; // PK_TILE_ROWS
inline constexpr int kPersistentMaxTokens = 8; // PK_MAX_TOKENS
inline constexpr int kPersistentMaxSequences = 8;
inline constexpr int kPersistentMaxHeadDim = 128;
inline constexpr int kPersistentMaxGroup = 4;
inline constexpr int kPersistentMaxSplits = 32;    // PK_MAX_SPLITS
inline constexpr int kPersistentMaxQ8Groups = 128; // PK_MAX_Q8_GROUPS

// PkInstr of kernels/persistent_args.cuh, byte for byte.
struct PersistentInstr {
  int32_t op = 0; // a PersistentStage
  int32_t layer = 0;
  int32_t begin = 0; // matmuls: first tile; attention: the sequence
  int32_t end = 0;   // matmuls: tile past the last; attention: the KV head
  int32_t wait_counter = 0;
  int32_t wait_target = 0; // 0: no wait
  int32_t signal_counter = 0;
  int32_t part = 0; // attention: its key range (of attention_splits); LM head: its range's number
};
static_assert(sizeof(PersistentInstr) == 32, "must match PkInstr in kernels/persistent_args.cuh");

struct PersistentShape {
  int n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  int n_sequences = 1; // attention instructions per KV head
  int blocks = 1;      // the grid: matmul tiles are shared out among this many
  // Bytes of one 128-weight block of a row with its f16 scale (Q1_0: 18,
  // Q2_0: 34): what a tile's weights take in the kernel's weight buffer.
  int block_bytes = 0;
  // The weight buffer (shared memory) that holds one matmul instruction's
  // weights; a stage is cut into more instructions than blocks where its
  // shares would not fit. 0: no limit (block_bytes unused).
  int weight_buffer_bytes = 0;
  // Key ranges each (sequence, KV head)'s attention is cut into, so that
  // long contexts keep every block busy; the last range to finish merges.
  int attention_splits = 1;
  // Rows of the LM head run in the launch after the last layer, with the
  // greedy argmax (its input is n_embd wide, as Q/K/V's); 0: none, the LM
  // head runs apart.
  int n_vocab = 0;
  // persistent_shares=balanced: each matmul stage's rows are counted in
  // units of unit_rows (persistent_balanced_unit_rows) and spread over the
  // blocks so that no block gets more than one unit a round above another;
  // else in 16-row tiles, ranges of as many as the blocks' even share
  // rounded up, which leaves a block up to a tile above the mean (4B's
  // output projection: 160 tiles on 132 blocks, 2 a block at most against
  // 1.21 on average).
  bool balanced = false;
  int unit_rows = kPersistentTileRows; // PersistentInstr::begin, end count these
  // persistent_qkv=fused, where it applies (persistent_fused_applies): each
  // layer's Q/K/V and attention as one stage of qkv_attention instructions.
  bool fused_qkv_attention = false;
};

// Whether Q/K/V can be fused with attention in `shape`'s plan: every one of
// its (sequence, KV head, key range) instructions resident at once (no more
// of them than blocks: a share waits for its head's other shares), a
// head's rows whole units, and a share's weights within the buffer.
bool persistent_fused_applies(const PersistentShape &shape);

// The rows of a balanced plan's unit: the fewest, dividing 16, for which
// every matrix's copy of a unit's rows keeps its scales in whole 16-byte
// chunks (rows x blocks of 128 of every input a multiple of 8): one for
// 1.7B and 8B, two for 4B (2,560 wide: 20 blocks).
int persistent_balanced_unit_rows(const PersistentShape &shape);

// The key ranges that give each block about one attention instruction:
// blocks / (sequences x KV heads), between 1 and kPersistentMaxSplits.
int persistent_attention_splits(int blocks, int n_sequences, int n_head_kv);
// The key ranges of a step whose longest sequence has `longest_context`
// cached keys (the ranges divide those; the step's own keys go to the last
// range): with
// keys_per_range > 0, the largest power of two of ranges that gives each at
// least that many keys, between 1 and persistent_attention_splits (powers
// of two: a plan is built per count, and few counts build few plans); with
// 0, persistent_attention_splits.
int persistent_step_attention_splits(int blocks, int n_sequences, int n_head_kv,
                                     int longest_context, int keys_per_range);

// "Q/K/V", "attention", "output projection", "gate/up", "down projection"
// for a PersistentStage's value ("unknown" for others).
const char *persistent_stage_name(int op);

// The width of a matmul stage's input: n_head x head_dim for the output
// projection, n_ff for the down projection, n_embd for Q/K/V and gate/up.
int persistent_stage_input_width(const PersistentShape &shape, PersistentStage stage);

// Bytes of one tile's weights in a matmul stage (gate/up: of both matrices).
int persistent_tile_bytes(const PersistentShape &shape, PersistentStage stage);
// Bytes of one unit's (shape.unit_rows rows).
int persistent_unit_bytes(const PersistentShape &shape, PersistentStage stage);
// The largest of those: the least weight buffer the plan can be cut for.
int persistent_largest_tile_bytes(const PersistentShape &shape);

// Dynamic shared bytes of a block before its weight buffer in a step of
// n_tokens tokens (PK_SHARED_BYTES): the control area, then the larger of
// the tokens' staged input rows (`staged_row_bytes` each, the int8 records
// of the widest input, padded to 16 more than a multiple of 128 bytes; with
// persistent_matmul=mma, the warps' sums after them) and an attention's
// working set (PkAttention). A multiple of 16, as the weight buffer's
// cp.async copies need.
unsigned persistent_work_bytes(int64_t staged_row_bytes, int n_tokens, bool mma);
// The weight buffer that `shared_limit` bytes of dynamic shared memory
// leave beside that work area, a multiple of 16 (0 or less: none).
int persistent_weight_buffer_bytes(int shared_limit, int64_t staged_row_bytes, int n_tokens,
                                   bool mma);

// The counter of `stage` in `layer`.
inline int persistent_counter(int layer, PersistentStage stage) {
  return layer * kPersistentStages + static_cast<int>(stage);
}
// The counters of the LM head's stages (head, argmax), after the layers'.
inline int persistent_head_counter(int n_layer, PersistentStage stage) {
  return n_layer * kPersistentStages + static_cast<int>(stage) -
         static_cast<int>(PersistentStage::head);
}
// How many counters a launch of an n_layer model zeroes: the layers' and
// the LM head's (whether or not a plan has one).
inline int persistent_counter_count(int n_layer) {
  return (n_layer + 1) * kPersistentStages;
}
// Whether `op` is a stage the kernel knows.
inline bool persistent_known_stage(int op) {
  return (op >= 0 && op <= static_cast<int>(PersistentStage::argmax)) ||
         op == static_cast<int>(PersistentStage::qkv_attention);
}

// The list, in dependency order: every instruction waits for the whole
// stage before it (the previous layer's down projection for a layer's
// Q/K/V), and each stage's matmul units (tiles, or balanced units) are
// split into contiguous ranges, `blocks` of them, or more where a range's
// weights would not fit weight_buffer_bytes. With n_vocab > 0 the LM head's tiles follow as one
// more such stage (each range numbered in `part`), then one argmax
// instruction that waits for them all. Block b of the grid runs entries b,
// b + blocks, ...
std::vector<PersistentInstr> build_persistent_plan(const PersistentShape &shape);

// "layer 3 attention (sequence 0, KV head 2, key range 0)", for stall reports.
std::string describe_persistent_instr(const PersistentInstr &instr);

} // namespace bonsai::cuda
