#include "persistent_plan.hpp"

#include <algorithm>

#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

int units(int rows, int unit_rows) {
  return (rows + unit_rows - 1) / unit_rows;
}

} // namespace

const char *persistent_stage_name(int op) {
  switch (static_cast<PersistentStage>(op)) {
  case PersistentStage::qkv:
    return "Q/K/V";
  case PersistentStage::attention:
    return "attention";
  case PersistentStage::output:
    return "output projection";
  case PersistentStage::ffn_up:
    return "gate/up";
  case PersistentStage::ffn_down:
    return "down projection";
  case PersistentStage::head:
    return "LM head";
  case PersistentStage::argmax:
    return "argmax";
  case PersistentStage::qkv_attention:
    return "Q/K/V and attention";
  }
  return "unknown";
}

namespace {

// Appends one stage of `layer`: waits for all `wait_count` instructions of
// the stage counted by `wait_counter` (none when wait_count is 0), signals
// its own counter; returns how many instructions it added.
struct StageBuilder {
  std::vector<PersistentInstr> &list;
  int layer;
  int wait_counter, wait_count;

  PersistentInstr make(PersistentStage stage, int begin, int end) const {
    PersistentInstr instr;
    instr.op = static_cast<int32_t>(stage);
    instr.layer = layer;
    instr.begin = begin;
    instr.end = end;
    instr.wait_counter = wait_count > 0 ? wait_counter : 0;
    instr.wait_target = wait_count;
    instr.signal_counter = stage >= PersistentStage::head
                               ? persistent_head_counter(layer + 1, stage)
                               : persistent_counter(layer, stage);
    return instr;
  }
  // Units [0, n_units) in `blocks` contiguous ranges, or, where a range's
  // weights would pass the weight buffer, in as many rounds of `blocks`
  // ranges as it takes, the units spread evenly over all of them: a block
  // then runs one range a round, none more units than another but one a
  // round. (Ranges of as many tiles as fit, and a short last round, left
  // some blocks two full ranges to run after the others had finished: 8B at
  // 8 tokens, 154 ranges of 5 tiles on 132 blocks, where 256 of 3 take 6
  // tiles a block at most.) Unbalanced plans cut their tiles into ranges of
  // the blocks' even share rounded up, the last range shorter and some
  // blocks without one; balanced plans into exactly `rounds x blocks`
  // ranges (fewer only where there are fewer units), the first ones a unit
  // longer, so that per block the shares differ by a unit a round at most.
  int matmul(PersistentStage stage, int n_units, const PersistentShape &shape) {
    // At least one tile fits: build_persistent_plan checked the buffer.
    const int fit = shape.weight_buffer_bytes > 0
                        ? shape.weight_buffer_bytes / persistent_unit_bytes(shape, stage)
                        : n_units;
    int per_block = (n_units + shape.blocks - 1) / shape.blocks;
    const int rounds = per_block > fit ? (per_block + fit - 1) / fit : 1;
    if (shape.balanced) {
      const int ranges = std::min(n_units, rounds * shape.blocks);
      const int base = n_units / ranges, longer = n_units % ranges;
      for (int i = 0, begin = 0; i < ranges; ++i) {
        const int end = begin + base + (i < longer ? 1 : 0);
        list.push_back(make(stage, begin, end));
        begin = end;
      }
      return ranges;
    }
    if (rounds > 1)
      per_block = (n_units + rounds * shape.blocks - 1) / (rounds * shape.blocks);
    int added = 0;
    for (int begin = 0; begin < n_units; begin += per_block, ++added)
      list.push_back(make(stage, begin, std::min(n_units, begin + per_block)));
    return added;
  }
  // One instruction per (sequence, KV head, key range); fused, each also
  // computes a share of its head's Q/K/V rows, and signals the attention
  // counter all the same.
  int attention(int n_sequences, int n_head_kv, int splits, bool fused = false) {
    for (int s = 0; s < n_sequences; ++s)
      for (int h = 0; h < n_head_kv; ++h)
        for (int part = 0; part < splits; ++part) {
          list.push_back(make(PersistentStage::attention, s, h));
          list.back().part = part;
          if (fused)
            list.back().op = static_cast<int32_t>(PersistentStage::qkv_attention);
        }
    return n_sequences * n_head_kv * splits;
  }
};

} // namespace

int persistent_stage_input_width(const PersistentShape &shape, PersistentStage stage) {
  return stage == PersistentStage::output     ? shape.n_head * shape.head_dim
         : stage == PersistentStage::ffn_down ? shape.n_ff
                                              : shape.n_embd; // Q/K/V, gate/up, the LM head
}

int persistent_tile_bytes(const PersistentShape &shape, PersistentStage stage) {
  const int cols = persistent_stage_input_width(shape, stage);
  const int matrices = stage == PersistentStage::ffn_up ? 2 : 1;
  return kPersistentTileRows * (cols / 128) * shape.block_bytes * matrices;
}

int persistent_unit_bytes(const PersistentShape &shape, PersistentStage stage) {
  return persistent_tile_bytes(shape, stage) / kPersistentTileRows * shape.unit_rows;
}

bool persistent_fused_applies(const PersistentShape &shape) {
  const int shares = shape.n_sequences * shape.n_head_kv * shape.attention_splits;
  const int group = shape.n_head_kv > 0 ? shape.n_head / shape.n_head_kv : 0;
  const int unit = shape.unit_rows;
  if (shares > shape.blocks || shape.head_dim % unit != 0 || group < 1)
    return false;
  const int head_units = (group + 2) * shape.head_dim / unit;
  const int share_units = (head_units + shares - 1) / shares;
  return shape.weight_buffer_bytes <= 0 ||
         share_units * persistent_unit_bytes(shape, PersistentStage::qkv) <=
             shape.weight_buffer_bytes;
}

int persistent_balanced_unit_rows(const PersistentShape &shape) {
  const int widths[] = {shape.n_embd, shape.n_head * shape.head_dim, shape.n_ff};
  for (int rows = 1; rows < kPersistentTileRows; rows *= 2) {
    bool whole = true;
    for (int width : widths)
      whole = whole && rows * (width / 128) % 8 == 0;
    if (whole)
      return rows;
  }
  return kPersistentTileRows;
}

int persistent_largest_tile_bytes(const PersistentShape &shape) {
  int largest = 0;
  for (PersistentStage stage : {PersistentStage::qkv, PersistentStage::output,
                                PersistentStage::ffn_up, PersistentStage::ffn_down})
    largest = std::max(largest, persistent_tile_bytes(shape, stage));
  return largest;
}

namespace {
constexpr unsigned kControlBytes = 320;    // PK_CONTROL_BYTES
constexpr unsigned kMmaReduceBytes = 8192; // PK_REDUCE_BYTES
// PkAttention: queries, the step's keys and values, per warp its softmax
// state, then the outputs (persistent_quantize=producer).
constexpr unsigned kAttentionBytes =
    4 * (8 * 4 * 128 + 2 * 8 * 128 + 2 * 8 * 4 + 8 * 4 * 128 + 8 * 4 * 128);
} // namespace

unsigned persistent_work_bytes(int64_t staged_row_bytes, int n_tokens, bool mma) {
  // PK_STAGED_TOKEN_BYTES: the same word of eight tokens' rows in eight banks.
  const auto row = static_cast<unsigned>(staged_row_bytes);
  const unsigned padded = row + (144 - row % 128) % 128;
  const unsigned staged = static_cast<unsigned>(n_tokens) * padded + (mma ? kMmaReduceBytes : 0);
  return kControlBytes + std::max(staged, kAttentionBytes);
}

int persistent_weight_buffer_bytes(int shared_limit, int64_t staged_row_bytes, int n_tokens,
                                   bool mma) {
  const int left =
      shared_limit - static_cast<int>(persistent_work_bytes(staged_row_bytes, n_tokens, mma));
  return left / 16 * 16;
}

std::vector<PersistentInstr> build_persistent_plan(const PersistentShape &shape) {
  if (shape.n_layer < 1 || shape.blocks < 1 || shape.n_sequences < 1 ||
      shape.n_sequences > kPersistentMaxSequences || shape.n_head_kv < 1 || shape.head_dim < 1 ||
      shape.n_head % shape.n_head_kv != 0 || shape.attention_splits < 1 ||
      shape.attention_splits > kPersistentMaxSplits || shape.n_vocab < 0 || shape.unit_rows < 1 ||
      kPersistentTileRows % shape.unit_rows != 0)
    fail_invalid(strformat("persistent decode plan: bad shape (%d layers, %d blocks, %d sequences, "
                           "%d/%d heads, %d key ranges, %d LM head rows)",
                           shape.n_layer, shape.blocks, shape.n_sequences, shape.n_head,
                           shape.n_head_kv, shape.attention_splits, shape.n_vocab));
  if (shape.fused_qkv_attention && !persistent_fused_applies(shape))
    fail_invalid("persistent decode plan: Q/K/V cannot be fused with attention in this shape");
  if (shape.weight_buffer_bytes > 0 &&
      (shape.block_bytes < 1 || persistent_largest_tile_bytes(shape) > shape.weight_buffer_bytes))
    fail_invalid(strformat("persistent decode plan: a %d-byte weight buffer holds no tile of "
                           "%d bytes",
                           shape.weight_buffer_bytes, persistent_largest_tile_bytes(shape)));
  const int u = shape.unit_rows;
  const int qkv_units =
      units(shape.n_head * shape.head_dim, u) + 2 * units(shape.n_head_kv * shape.head_dim, u);
  std::vector<PersistentInstr> list;
  int previous_counter = 0, previous_count = 0; // layer 0 waits for nothing
  for (int layer = 0; layer < shape.n_layer; ++layer) {
    StageBuilder stage{list, layer, previous_counter, previous_count};
    const auto next = [&](PersistentStage done, int count) {
      stage.wait_counter = persistent_counter(layer, done);
      stage.wait_count = count;
    };
    if (shape.fused_qkv_attention) {
      next(PersistentStage::attention,
           stage.attention(shape.n_sequences, shape.n_head_kv, shape.attention_splits, true));
    } else {
      next(PersistentStage::qkv, stage.matmul(PersistentStage::qkv, qkv_units, shape));
      next(PersistentStage::attention,
           stage.attention(shape.n_sequences, shape.n_head_kv, shape.attention_splits));
    }
    next(PersistentStage::output,
         stage.matmul(PersistentStage::output, units(shape.n_embd, u), shape));
    next(PersistentStage::ffn_up,
         stage.matmul(PersistentStage::ffn_up, units(shape.n_ff, u), shape));
    previous_count = stage.matmul(PersistentStage::ffn_down, units(shape.n_embd, u), shape);
    previous_counter = persistent_counter(layer, PersistentStage::ffn_down);
  }
  if (shape.n_vocab > 0) {
    // The LM head reads the last layer's output (its tiles cost what a
    // Q/K/V tile does: inputs as wide, so the buffer holds one), then the
    // argmax reads every range's best rows.
    StageBuilder head{list, shape.n_layer - 1, previous_counter, previous_count};
    const size_t first = list.size();
    const int ranges = head.matmul(PersistentStage::head, units(shape.n_vocab, u), shape);
    for (size_t i = first; i < list.size(); ++i)
      list[i].part = static_cast<int32_t>(i - first);
    head.wait_counter = persistent_head_counter(shape.n_layer, PersistentStage::head);
    head.wait_count = ranges;
    list.push_back(head.make(PersistentStage::argmax, 0, 0));
  }
  return list;
}

int persistent_attention_splits(int blocks, int n_sequences, int n_head_kv) {
  const int heads = std::max(1, n_sequences * n_head_kv);
  return std::clamp(blocks / heads, 1, kPersistentMaxSplits);
}

int persistent_step_attention_splits(int blocks, int n_sequences, int n_head_kv,
                                     int longest_context, int keys_per_range) {
  const int most = persistent_attention_splits(blocks, n_sequences, n_head_kv);
  if (keys_per_range <= 0)
    return most;
  int splits = 1;
  while (splits * 2 <= most && int64_t{splits} * 2 * keys_per_range <= longest_context)
    splits *= 2;
  return splits;
}

std::string describe_persistent_instr(const PersistentInstr &instr) {
  if (instr.op == static_cast<int32_t>(PersistentStage::argmax))
    return "argmax (every token's best LM head row)";
  if (instr.op == static_cast<int32_t>(PersistentStage::head))
    return strformat("LM head range %d (tiles %d..%d)", instr.part, instr.begin, instr.end - 1);
  if (instr.op == static_cast<int32_t>(PersistentStage::attention))
    return strformat("layer %d attention (sequence %d, KV head %d, key range %d)", instr.layer,
                     instr.begin, instr.end, instr.part);
  if (instr.op == static_cast<int32_t>(PersistentStage::qkv_attention))
    return strformat("layer %d Q/K/V and attention (sequence %d, KV head %d, key range %d)",
                     instr.layer, instr.begin, instr.end, instr.part);
  return strformat("layer %d %s (tiles %d..%d)", instr.layer, persistent_stage_name(instr.op),
                   instr.begin, instr.end - 1);
}

} // namespace bonsai::cuda
