#include "persistent_plan.hpp"

#include <algorithm>

#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

int tiles(int rows) {
  return (rows + kPersistentTileRows - 1) / kPersistentTileRows;
}

const char *stage_name(int op) {
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
  }
  return "unknown";
}

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
    instr.signal_counter = persistent_counter(layer, stage);
    return instr;
  }
  // Tiles [0, n_tiles) in at most `blocks` contiguous ranges.
  int matmul(PersistentStage stage, int n_tiles, int blocks) {
    const int per_block = (n_tiles + blocks - 1) / blocks;
    int added = 0;
    for (int begin = 0; begin < n_tiles; begin += per_block, ++added)
      list.push_back(make(stage, begin, std::min(n_tiles, begin + per_block)));
    return added;
  }
  int attention(int n_sequences, int n_head_kv) {
    for (int s = 0; s < n_sequences; ++s)
      for (int h = 0; h < n_head_kv; ++h)
        list.push_back(make(PersistentStage::attention, s, h));
    return n_sequences * n_head_kv;
  }
};

} // namespace

std::vector<PersistentInstr> build_persistent_plan(const PersistentShape &shape) {
  if (shape.n_layer < 1 || shape.blocks < 1 || shape.n_sequences < 1 ||
      shape.n_sequences > kPersistentMaxSequences || shape.n_head_kv < 1 || shape.head_dim < 1 ||
      shape.n_head % shape.n_head_kv != 0)
    fail_invalid(strformat("persistent decode plan: bad shape (%d layers, %d blocks, %d sequences, "
                           "%d/%d heads)",
                           shape.n_layer, shape.blocks, shape.n_sequences, shape.n_head,
                           shape.n_head_kv));
  const int qkv_tiles =
      tiles(shape.n_head * shape.head_dim) + 2 * tiles(shape.n_head_kv * shape.head_dim);
  std::vector<PersistentInstr> list;
  int previous_counter = 0, previous_count = 0; // layer 0 waits for nothing
  for (int layer = 0; layer < shape.n_layer; ++layer) {
    StageBuilder stage{list, layer, previous_counter, previous_count};
    const auto next = [&](PersistentStage done, int count) {
      stage.wait_counter = persistent_counter(layer, done);
      stage.wait_count = count;
    };
    next(PersistentStage::qkv, stage.matmul(PersistentStage::qkv, qkv_tiles, shape.blocks));
    next(PersistentStage::attention, stage.attention(shape.n_sequences, shape.n_head_kv));
    next(PersistentStage::output,
         stage.matmul(PersistentStage::output, tiles(shape.n_embd), shape.blocks));
    next(PersistentStage::ffn_up,
         stage.matmul(PersistentStage::ffn_up, tiles(shape.n_ff), shape.blocks));
    previous_count = stage.matmul(PersistentStage::ffn_down, tiles(shape.n_embd), shape.blocks);
    previous_counter = persistent_counter(layer, PersistentStage::ffn_down);
  }
  return list;
}

std::string describe_persistent_instr(const PersistentInstr &instr) {
  if (instr.op == static_cast<int32_t>(PersistentStage::attention))
    return strformat("layer %d attention (sequence %d, KV head %d)", instr.layer, instr.begin,
                     instr.end);
  return strformat("layer %d %s (tiles %d..%d)", instr.layer, stage_name(instr.op), instr.begin,
                   instr.end - 1);
}

} // namespace bonsai::cuda
