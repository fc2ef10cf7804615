// The persistent decode kernel's instruction list (common/persistent_plan):
// checked against the rules the kernel relies on, with the counts worked
// out by hand for small shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "bonsai/plugin/plugin_error.hpp"
#include "persistent_plan.hpp"

namespace {

using bonsai::cuda::build_persistent_plan;
using bonsai::cuda::describe_persistent_instr;
using bonsai::cuda::persistent_counter;
using bonsai::cuda::PersistentInstr;
using bonsai::cuda::PersistentShape;
using bonsai::cuda::PersistentStage;

// A small shape: 4 layers, 512 wide, 8 query and 4 KV heads of 64, 1536 FFN.
PersistentShape tiny(int blocks, int sequences) {
  PersistentShape shape;
  shape.n_layer = 4;
  shape.n_embd = 512;
  shape.n_head = 8;
  shape.n_head_kv = 4;
  shape.head_dim = 64;
  shape.n_ff = 1536;
  shape.n_sequences = sequences;
  shape.blocks = blocks;
  return shape;
}

int op(PersistentStage stage) {
  return static_cast<int>(stage);
}

TEST(PersistentPlan, StagesSplitTheirTilesAmongTheBlocks) {
  // Q/K/V: (512 + 256 + 256) / 16 = 64 tiles; 4 blocks take 16 each.
  // Attention: 2 sequences x 4 KV heads. O and down: 32 tiles, 8 each.
  // Gate/up: 96 tiles, 24 each. Per layer 4 + 8 + 4 + 4 + 4 = 24.
  const std::vector<PersistentInstr> plan = build_persistent_plan(tiny(4, 2));
  ASSERT_EQ(plan.size(), 4u * 24u);
  const std::vector<int> ops = {0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
  for (size_t i = 0; i < 24; ++i)
    EXPECT_EQ(plan[i].op, ops[i]) << i;
  EXPECT_EQ(plan[0].begin, 0);
  EXPECT_EQ(plan[0].end, 16);
  EXPECT_EQ(plan[3].begin, 48);
  EXPECT_EQ(plan[3].end, 64);
  EXPECT_EQ(plan[16].end - plan[16].begin, 24);
  // Attention instructions name (sequence, KV head).
  EXPECT_EQ(plan[4].begin, 0);
  EXPECT_EQ(plan[4].end, 0);
  EXPECT_EQ(plan[11].begin, 1);
  EXPECT_EQ(plan[11].end, 3);
}

TEST(PersistentPlan, EveryTileOfEveryMatmulIsComputedExactlyOnce) {
  for (int blocks : {1, 3, 4, 7, 132}) {
    const std::vector<PersistentInstr> plan = build_persistent_plan(tiny(blocks, 1));
    std::map<std::pair<int, int>, std::vector<int>> covered; // (layer, op) -> count per tile
    for (const PersistentInstr &instr : plan) {
      if (instr.op == op(PersistentStage::attention))
        continue;
      std::vector<int> &tiles = covered[{instr.layer, instr.op}];
      for (int t = instr.begin; t < instr.end; ++t) {
        if (static_cast<int>(tiles.size()) <= t)
          tiles.resize(static_cast<size_t>(t) + 1);
        ++tiles[static_cast<size_t>(t)];
      }
    }
    const std::map<int, size_t> expected_tiles = {{0, 64}, {2, 32}, {3, 96}, {4, 32}};
    for (const auto &[key, tiles] : covered) {
      EXPECT_EQ(tiles.size(), expected_tiles.at(key.second)) << blocks << " blocks";
      for (int count : tiles)
        EXPECT_EQ(count, 1) << blocks << " blocks, layer " << key.first << ", op " << key.second;
    }
    EXPECT_EQ(covered.size(), 4u * 4u);
  }
}

// What makes the kernel deadlock-free and race-free: every wait names a
// counter of an earlier stage and the exact number of its instructions,
// which all come before it in the list.
TEST(PersistentPlan, EachWaitCountsAllOfTheStageBeforeItWhichComesEarlier) {
  const std::vector<PersistentInstr> plan = build_persistent_plan(tiny(3, 3));
  std::map<int, int> signals;    // counter -> instructions signalling it
  std::map<int, size_t> last_at; // counter -> position of its last signaller
  for (size_t i = 0; i < plan.size(); ++i) {
    ++signals[plan[i].signal_counter];
    last_at[plan[i].signal_counter] = i;
    EXPECT_EQ(plan[i].signal_counter,
              persistent_counter(plan[i].layer, static_cast<PersistentStage>(plan[i].op)));
  }
  const std::map<int, int> previous = {{0, 4}, {1, 0}, {2, 1}, {3, 2}, {4, 3}};
  for (size_t i = 0; i < plan.size(); ++i) {
    const PersistentInstr &instr = plan[i];
    if (instr.layer == 0 && instr.op == op(PersistentStage::qkv)) {
      EXPECT_EQ(instr.wait_target, 0) << "layer 0 starts at once";
      continue;
    }
    const int before_layer = instr.op == 0 ? instr.layer - 1 : instr.layer;
    const int counter =
        persistent_counter(before_layer, static_cast<PersistentStage>(previous.at(instr.op)));
    EXPECT_EQ(instr.wait_counter, counter) << describe_persistent_instr(instr);
    EXPECT_EQ(instr.wait_target, signals[counter]) << describe_persistent_instr(instr);
    EXPECT_LT(last_at[counter], i) << describe_persistent_instr(instr);
  }
  // 3 sequences x 4 KV heads per layer.
  EXPECT_EQ(signals[persistent_counter(2, PersistentStage::attention)], 12);
}

// The weight buffer: a tile's bytes worked out by hand, and a stage whose
// share per block would not fit is cut into more, smaller instructions.
TEST(PersistentPlan, StagesAreCutWhereTheirWeightsWouldNotFitTheBuffer) {
  PersistentShape shape = tiny(4, 1);
  shape.block_bytes = 18; // Q1_0: 16 code bytes and an f16 scale per 128 weights
  // 16 rows x (512 / 128) blocks x 18 bytes; gate/up twice; down 1536 wide.
  EXPECT_EQ(bonsai::cuda::persistent_tile_bytes(shape, PersistentStage::qkv), 1152);
  EXPECT_EQ(bonsai::cuda::persistent_tile_bytes(shape, PersistentStage::output), 1152);
  EXPECT_EQ(bonsai::cuda::persistent_tile_bytes(shape, PersistentStage::ffn_up), 2304);
  EXPECT_EQ(bonsai::cuda::persistent_tile_bytes(shape, PersistentStage::ffn_down), 3456);
  EXPECT_EQ(bonsai::cuda::persistent_largest_tile_bytes(shape), 3456);
  // 7,000 bytes: Q/K/V and O take 6 tiles at most (of 16 and 8 per block),
  // gate/up 3 (of 24), down 2 (of 8). Each stage runs in rounds of 4 ranges
  // (one per block), the tiles spread evenly: Q/K/V 3 rounds of 64 / 12 ->
  // 6 tiles, O 2 rounds of 32 / 8 = 4, gate/up 8 rounds of 3, down 4 of 2.
  shape.weight_buffer_bytes = 7000;
  const std::vector<PersistentInstr> plan = build_persistent_plan(shape);
  std::map<int, int> per_op, widest;
  for (const PersistentInstr &instr : plan) {
    if (instr.layer != 0 || instr.op == op(PersistentStage::attention))
      continue;
    ++per_op[instr.op];
    widest[instr.op] = std::max(widest[instr.op], instr.end - instr.begin);
  }
  EXPECT_EQ(per_op[op(PersistentStage::qkv)], 11); // 64 tiles by 6
  EXPECT_EQ(widest[op(PersistentStage::qkv)], 6);
  EXPECT_EQ(per_op[op(PersistentStage::output)], 8); // 32 by 4, not 6 by 6 and 2: 8 a block
  EXPECT_EQ(widest[op(PersistentStage::output)], 4);
  EXPECT_EQ(per_op[op(PersistentStage::ffn_up)], 32);
  EXPECT_EQ(per_op[op(PersistentStage::ffn_down)], 16);
  // A buffer smaller than the down projection's tile serves no plan.
  shape.weight_buffer_bytes = 3455;
  EXPECT_THROW(build_persistent_plan(shape), bonsai::plugin::PluginError);
  // Without one, each stage is shared out among the blocks as before.
  shape.weight_buffer_bytes = 0;
  EXPECT_EQ(build_persistent_plan(shape).size(), build_persistent_plan(tiny(4, 1)).size());
}

// The weight buffer is what shared memory leaves beside a step's work
// area, which grows with its tokens. 8B Q1_0 on an H100/H200 (232,448 bytes
// of opt-in shared memory): a token's int8 records of the 12,288-wide down
// projection input take 96 x 152 = 14,592 bytes, padded to 14,608; 8
// tokens and the MMA's 8,192 bytes of sums make 125,056, plus 320 of
// control; one token's row is smaller than the attention's 57,600. At 8
// tokens gate/up's 6-tile shares (768 tiles on 132 blocks, 18,432 bytes a
// tile) do not fit 5: two rounds of 132 ranges of 768 / 264 -> 3 tiles, 256
// ranges (ranges of 5, 154 of them, left 22 blocks two of 5 to run, 10
// tiles: run 2 of 2026-11-28's trace). One token's buffer holds 9.
TEST(PersistentPlan, FewerTokensLeaveALargerWeightBufferAndFewerCutStages) {
  using bonsai::cuda::persistent_weight_buffer_bytes;
  using bonsai::cuda::persistent_work_bytes;
  constexpr int kOptin = 232448, kRow = 14592;
  EXPECT_EQ(persistent_work_bytes(kRow, 8, true), 125376u);
  EXPECT_EQ(persistent_work_bytes(kRow, 8, false), 117184u);
  EXPECT_EQ(persistent_work_bytes(kRow, 1, true), 57920u);
  EXPECT_EQ(persistent_work_bytes(kRow, 1, false), 57920u);
  EXPECT_EQ(persistent_weight_buffer_bytes(kOptin, kRow, 8, true), 107072);
  EXPECT_EQ(persistent_weight_buffer_bytes(kOptin, kRow, 1, true), 174528);
  EXPECT_LE(persistent_weight_buffer_bytes(1000, kRow, 1, true), 0);
  PersistentShape shape;
  shape.n_layer = 1, shape.n_embd = 4096, shape.n_head = 32, shape.n_head_kv = 8;
  shape.head_dim = 128, shape.n_ff = 12288, shape.blocks = 132, shape.block_bytes = 18;
  shape.attention_splits = 16;
  const auto gate_up = [&](int buffer) {
    shape.weight_buffer_bytes = buffer;
    int n = 0;
    for (const PersistentInstr &instr : build_persistent_plan(shape))
      n += instr.op == op(PersistentStage::ffn_up) ? 1 : 0;
    return n;
  };
  EXPECT_EQ(gate_up(persistent_weight_buffer_bytes(kOptin, kRow, 8, true)), 256);
  EXPECT_EQ(gate_up(persistent_weight_buffer_bytes(kOptin, kRow, 1, true)), 128);
}

// A real shape of Q1_0 (18 bytes a block of 128) on `blocks` SMs, one layer.
PersistentShape real_shape(int n_embd, int n_head, int n_ff, int blocks) {
  PersistentShape shape;
  shape.n_layer = 1, shape.n_embd = n_embd, shape.n_head = n_head, shape.n_head_kv = 8;
  shape.head_dim = 128, shape.n_ff = n_ff, shape.blocks = blocks, shape.block_bytes = 18;
  shape.attention_splits = 1;
  return shape;
}

// Rows each block computes in each matmul stage of layer 0 (block b runs
// entries b, b + blocks, ... of the list), by stage; and every row of each
// stage counted once (the units cover [0, n) without a gap or an overlap).
std::map<int, std::vector<long>> rows_per_block(const PersistentShape &shape) {
  const std::vector<PersistentInstr> plan = build_persistent_plan(shape);
  std::map<int, std::vector<long>> rows;
  std::map<int, int> next_unit;
  for (size_t i = 0; i < plan.size(); ++i) {
    const PersistentInstr &instr = plan[i];
    if (instr.layer != 0 || instr.op == op(PersistentStage::attention) ||
        instr.op == op(PersistentStage::argmax))
      continue;
    std::vector<long> &share = rows[instr.op];
    share.resize(static_cast<size_t>(shape.blocks));
    share[i % static_cast<size_t>(shape.blocks)] += long{instr.end - instr.begin} * shape.unit_rows;
    EXPECT_EQ(instr.begin, next_unit[instr.op]) << describe_persistent_instr(instr);
    next_unit[instr.op] = instr.end;
  }
  return rows;
}

double worst_over_mean(const std::vector<long> &share) {
  long total = 0, most = 0;
  for (long rows : share) {
    total += rows;
    most = std::max(most, rows);
  }
  return static_cast<double>(most) * static_cast<double>(share.size()) / static_cast<double>(total);
}

// persistent_shares=balanced: on the real shapes (1.7B, 4B, 8B) and the
// SM counts of an H100/H200 (132), an RTX 4090 (128) and an L40S (142),
// with the weight buffers of one token and of eight (H200: 174,528 and
// 107,072 bytes), no block's rows in any stage pass about 1.1 times the
// mean, and every row is computed once. A share is whole units, so the
// bound is ceil(m) / m for m units a block: the worst here is 4B's output
// projection on an L40S, 1,280 units of 2 rows on 142 blocks, 10 against
// 9.01 (1.11x). Whole tiles do not come near: 4B's output projection is
// 160 tiles on 132 blocks, 2 a block at most against 1.21 on average
// (1.65x).
TEST(PersistentPlan, BalancedSharesKeepEveryBlockWithinATenthOfTheMean) {
  struct Shape {
    const char *name;
    int n_embd, n_head, n_ff;
  };
  for (const Shape s :
       {Shape{"1.7B", 2048, 16, 6144}, Shape{"4B", 2560, 32, 9728}, Shape{"8B", 4096, 32, 12288}})
    for (int blocks : {132, 128, 142})
      for (int buffer : {174528, 107072}) {
        PersistentShape shape = real_shape(s.n_embd, s.n_head, s.n_ff, blocks);
        shape.weight_buffer_bytes = buffer;
        shape.n_vocab = 151936;
        shape.balanced = true;
        shape.unit_rows = bonsai::cuda::persistent_balanced_unit_rows(shape);
        const std::map<int, std::vector<long>> rows = rows_per_block(shape);
        const long expected[] = {long{s.n_head + 16} * 128, 0, s.n_embd, s.n_ff, s.n_embd, 151936};
        for (const auto &[stage, share] : rows) {
          SCOPED_TRACE(std::string(s.name) + ", " + std::to_string(blocks) + " blocks, " +
                       std::to_string(buffer) + " bytes, " +
                       bonsai::cuda::persistent_stage_name(stage));
          long total = 0;
          for (long r : share)
            total += r;
          EXPECT_EQ(total, expected[stage]);
          EXPECT_LE(worst_over_mean(share), 1.11);
        }
        EXPECT_EQ(rows.size(), 5u); // four stages and the LM head
        // The LM head's ranges fit the plugin's buffer of their best rows
        // (a range per tile, two rounds of blocks more), with a third of the
        // buffer too (persistent_stream=3).
        for (int slots : {1, 3}) {
          shape.weight_buffer_bytes = buffer / slots / 16 * 16;
          const std::vector<PersistentInstr> plan = build_persistent_plan(shape);
          const auto ranges = std::count_if(plan.begin(), plan.end(), [](const PersistentInstr &i) {
            return i.op == op(PersistentStage::head);
          });
          EXPECT_LE(ranges, 151936 / 16 + 2 * blocks) << slots << " slots";
        }
      }
  PersistentShape tiles = real_shape(2560, 32, 9728, 132);
  EXPECT_NEAR(worst_over_mean(rows_per_block(tiles).at(op(PersistentStage::output))), 1.65, 0.01);
}

// A balanced unit is the fewest rows, dividing 16, whose scales fill whole
// 16-byte chunks in every matrix: rows x (input width / 128) a multiple of 8.
TEST(PersistentPlan, BalancedUnitsAreTheFewestRowsWithWholeChunksOfScales) {
  using bonsai::cuda::persistent_balanced_unit_rows;
  EXPECT_EQ(persistent_balanced_unit_rows(real_shape(4096, 32, 12288, 132)), 1); // 32, 96 blocks
  EXPECT_EQ(persistent_balanced_unit_rows(real_shape(2048, 16, 6144, 132)), 1);  // 16, 48
  EXPECT_EQ(persistent_balanced_unit_rows(real_shape(2560, 32, 9728, 132)), 2);  // 20, 76
  EXPECT_EQ(persistent_balanced_unit_rows(real_shape(768, 8, 2048, 132)), 4);    // 6 blocks
  EXPECT_EQ(persistent_balanced_unit_rows(tiny(4, 1)), 2);                       // 4, 12 blocks
  PersistentShape odd = tiny(4, 1);
  odd.n_ff = 384; // 3 blocks of 128: 8 rows
  EXPECT_EQ(persistent_balanced_unit_rows(odd), 8);
  odd.unit_rows = 3; // not a divisor of a tile
  EXPECT_THROW(build_persistent_plan(odd), bonsai::plugin::PluginError);
}

// persistent_qkv=fused: a layer's Q/K/V and attention are one stage of one
// instruction per (sequence, KV head, key range), each waiting for the
// previous layer's down projection and signalling the attention counter,
// which the output projection waits for in full. Only where every one of
// a layer's instructions has a block of its own (they wait for each other
// through their head's ready count) and a share's weights fit the buffer.
TEST(PersistentPlan, FusedQkvAndAttentionAreOneStageWhoseSharesAllHaveABlock) {
  PersistentShape shape = tiny(8, 1); // 4 KV heads x 2 key ranges = 8 shares on 8 blocks
  shape.attention_splits = 2;
  shape.fused_qkv_attention = true;
  ASSERT_TRUE(bonsai::cuda::persistent_fused_applies(shape));
  const std::vector<PersistentInstr> plan = build_persistent_plan(shape);
  for (const PersistentInstr &instr : plan) {
    EXPECT_NE(instr.op, op(PersistentStage::qkv));
    EXPECT_NE(instr.op, op(PersistentStage::attention));
  }
  int fused = 0;
  for (const PersistentInstr &instr : plan) {
    if (instr.op == op(PersistentStage::output)) {
      EXPECT_EQ(instr.wait_target, 8) << describe_persistent_instr(instr);
    }
    if (instr.op != op(PersistentStage::qkv_attention) || instr.layer != 1)
      continue;
    ++fused;
    EXPECT_EQ(instr.signal_counter, persistent_counter(1, PersistentStage::attention));
    EXPECT_EQ(instr.wait_counter, persistent_counter(0, PersistentStage::ffn_down));
    EXPECT_THAT(describe_persistent_instr(instr),
                ::testing::StartsWith("layer 1 Q/K/V and attention (sequence 0, KV head "));
  }
  EXPECT_EQ(fused, 8);
  EXPECT_TRUE(bonsai::cuda::persistent_known_stage(op(PersistentStage::qkv_attention)));
  // One share more than blocks, or a share past the weight buffer: refused.
  shape.blocks = 7;
  EXPECT_FALSE(bonsai::cuda::persistent_fused_applies(shape));
  EXPECT_THROW(build_persistent_plan(shape), bonsai::plugin::PluginError);
  shape.blocks = 8;
  shape.block_bytes = 18;
  // A head's rows: (2 query heads + K + V) x 64 = 256 rows, 16 tiles; 8
  // shares of 2 tiles of 16 rows x 512 / 128 blocks x 18 bytes: 2,304 bytes.
  shape.weight_buffer_bytes = 2304 - 16;
  EXPECT_FALSE(bonsai::cuda::persistent_fused_applies(shape));
  shape.weight_buffer_bytes = 2304;
  EXPECT_TRUE(bonsai::cuda::persistent_fused_applies(shape));
}

// Long contexts: each (sequence, KV head)'s attention is cut into key
// ranges so that the grid has about one attention instruction per block.
TEST(PersistentPlan, AttentionIsCutIntoKeyRangesThatFillTheGrid) {
  using bonsai::cuda::persistent_attention_splits;
  EXPECT_EQ(persistent_attention_splits(132, 1, 8), 16); // an H100, 8B: 8 KV heads
  EXPECT_EQ(persistent_attention_splits(132, 8, 8), 2);
  EXPECT_EQ(persistent_attention_splits(132, 3, 8), 5);
  EXPECT_EQ(persistent_attention_splits(4, 2, 4), 1);     // never fewer than one
  EXPECT_EQ(persistent_attention_splits(1024, 1, 2), 32); // nor more than 32
  PersistentShape shape = tiny(4, 2);
  shape.attention_splits = 3;
  const std::vector<PersistentInstr> plan = build_persistent_plan(shape);
  std::set<std::tuple<int, int, int>> seen; // (sequence, KV head, key range) of layer 1
  int output_waits_for = 0;
  for (const PersistentInstr &instr : plan) {
    if (instr.layer != 1)
      continue;
    if (instr.op == op(PersistentStage::attention)) {
      EXPECT_TRUE(seen.insert({instr.begin, instr.end, instr.part}).second);
    }
    if (instr.op == op(PersistentStage::output))
      output_waits_for = instr.wait_target;
  }
  EXPECT_EQ(seen.size(), 2u * 4u * 3u);
  EXPECT_EQ(output_waits_for, 24); // every range of every head
  EXPECT_EQ(*seen.rbegin(), std::make_tuple(1, 3, 2));
  shape.attention_splits = 33;
  EXPECT_THROW(build_persistent_plan(shape), bonsai::plugin::PluginError);
}

// persistent_keys_per_range=N: a step's key ranges follow its longest
// context, each range at least N keys, a power of two of them, no more than
// the grid-filling count.
TEST(PersistentPlan, KeysPerRangeCutsShortContextsIntoFewerRanges) {
  using bonsai::cuda::persistent_step_attention_splits;
  // An H100 and 8B (8 KV heads), one sequence: 16 ranges at most.
  EXPECT_EQ(persistent_step_attention_splits(132, 1, 8, 129, 0), 16); // 0: always the most
  EXPECT_EQ(persistent_step_attention_splits(132, 1, 8, 1, 256), 1);
  EXPECT_EQ(persistent_step_attention_splits(132, 1, 8, 511, 256), 1); // 2 x 256 > 511
  EXPECT_EQ(persistent_step_attention_splits(132, 1, 8, 512, 256), 2);
  EXPECT_EQ(persistent_step_attention_splits(132, 1, 8, 1500, 256), 4); // 5.9: 4, a power of two
  EXPECT_EQ(persistent_step_attention_splits(132, 1, 8, 4097, 256), 16);
  EXPECT_EQ(persistent_step_attention_splits(132, 1, 8, 100000, 256), 16); // the most
  // Three sequences: persistent_attention_splits gives 5, so 4 at most.
  EXPECT_EQ(persistent_step_attention_splits(132, 3, 8, 100000, 1), 4);
  EXPECT_EQ(persistent_step_attention_splits(132, 8, 8, 100000, 1), 2);
  // One key a range: as many ranges as keys, up to the most.
  EXPECT_EQ(persistent_step_attention_splits(132, 1, 8, 3, 1), 2);
  EXPECT_EQ(persistent_step_attention_splits(132, 1, 8, 2000000000, 1073741824), 1);
}

// The LM head in the launch: after the last layer's down projection, its
// tiles as one more matmul stage (1,000 rows: 63 tiles, on 4 blocks 16, 16,
// 16 and 15; with a 7,000-byte buffer a Q/K/V-wide tile of 1,152 bytes
// fits 6 of them: 3 rounds of 4 ranges of 63 / 12 -> 6 tiles, 11 ranges),
// numbered in `part`, then one argmax waiting for every range.
TEST(PersistentPlan, TheLmHeadFollowsTheLastLayerAndTheArgmaxWaitsForAllOfIt) {
  using bonsai::cuda::persistent_counter_count;
  using bonsai::cuda::persistent_head_counter;
  PersistentShape shape = tiny(4, 1);
  const size_t layers_only = build_persistent_plan(shape).size();
  shape.n_vocab = 1000;
  for (int buffer : {0, 7000}) {
    shape.block_bytes = 18;
    shape.weight_buffer_bytes = buffer;
    const std::vector<PersistentInstr> plan = build_persistent_plan(shape);
    const int ranges = buffer == 0 ? 4 : 11;
    const size_t layer_instrs = plan.size() - static_cast<size_t>(ranges) - 1;
    if (buffer == 0) {
      EXPECT_EQ(layer_instrs, layers_only);
    }
    const int head_counter = persistent_head_counter(4, PersistentStage::head);
    EXPECT_EQ(head_counter, 20); // after the 4 x 5 counters of the layers
    EXPECT_EQ(persistent_counter_count(4), 25);
    std::vector<int> covered(63, 0);
    for (int r = 0; r < ranges; ++r) {
      const PersistentInstr &head = plan[layer_instrs + static_cast<size_t>(r)];
      EXPECT_EQ(head.op, op(PersistentStage::head));
      EXPECT_EQ(head.layer, 3);
      EXPECT_EQ(head.part, r);
      EXPECT_EQ(head.wait_counter, persistent_counter(3, PersistentStage::ffn_down));
      EXPECT_EQ(head.wait_target, buffer == 0 ? 4 : 16); // the down projection's ranges
      EXPECT_EQ(head.signal_counter, head_counter);
      EXPECT_LE(head.end - head.begin, buffer == 0 ? 16 : 6);
      for (int t = head.begin; t < head.end; ++t)
        ++covered[static_cast<size_t>(t)];
    }
    EXPECT_EQ(covered, std::vector<int>(63, 1));
    const PersistentInstr &argmax = plan.back();
    EXPECT_EQ(argmax.op, op(PersistentStage::argmax));
    EXPECT_EQ(argmax.wait_counter, head_counter);
    EXPECT_EQ(argmax.wait_target, ranges);
    EXPECT_EQ(argmax.signal_counter, head_counter + 1);
    EXPECT_EQ(describe_persistent_instr(plan[layer_instrs + 1]),
              buffer == 0 ? "LM head range 1 (tiles 16..31)" : "LM head range 1 (tiles 6..11)");
    EXPECT_EQ(describe_persistent_instr(argmax), "argmax (every token's best LM head row)");
  }
  shape.n_vocab = -1;
  EXPECT_THROW(build_persistent_plan(shape), bonsai::plugin::PluginError);
}

TEST(PersistentPlan, DescribesInstructionsForStallReports) {
  const std::vector<PersistentInstr> plan = build_persistent_plan(tiny(4, 1));
  EXPECT_EQ(describe_persistent_instr(plan[0]), "layer 0 Q/K/V (tiles 0..15)");
  EXPECT_EQ(describe_persistent_instr(plan[5]),
            "layer 0 attention (sequence 0, KV head 1, key range 0)");
  EXPECT_EQ(describe_persistent_instr(plan[plan.size() - 1]),
            "layer 3 down projection (tiles 24..31)");
}

TEST(PersistentPlan, RefusesShapesItCannotServe) {
  PersistentShape bad = tiny(4, 9); // more sequences than the kernel takes
  EXPECT_THROW(build_persistent_plan(bad), bonsai::plugin::PluginError);
  bad = tiny(0, 1);
  EXPECT_THROW(build_persistent_plan(bad), bonsai::plugin::PluginError);
  bad = tiny(4, 1);
  bad.n_head_kv = 3; // 8 query heads do not share out over 3
  EXPECT_THROW(build_persistent_plan(bad), bonsai::plugin::PluginError);
}

} // namespace
