#pragma once
// What a runner keeps for a model with recurrent layers (qwen35 on a plugin
// with the ABI 1.2 layer kinds): each sequence's tokens and the plugin's
// checkpoints of its state, so that cutting a sequence back, or copying a
// prefix of one into another, restores a checkpoint and runs the tokens
// after it again (docs/abi.md, "Layer kinds and recurrent state"). The slot
// runner of a Batch uses it for every slot, a session's runner for slot 0.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "plugins/plugin_context.hpp"

namespace bonsai::host {

class SlotCheckpoints {
public:
  // What the owner does to a slot, the way it steps it.
  struct SlotOps {
    // Empties the slot (zero state).
    std::function<void(int32_t slot)> reset;
    // Positions the slot holds.
    std::function<int32_t(int32_t slot)> length;
    // Runs `tokens` on the slot from its length, no LM head.
    std::function<void(int32_t slot, std::span<const int32_t> tokens)> advance;
    // A checkpoint set the slot's length to `position` (the owner may mirror it).
    std::function<void(int32_t slot, int32_t position)> restored;
  };

  // `max_sequences` share the checkpoint budget (checkpoint_policy.hpp).
  SlotCheckpoints(const PluginContext &context, const bonsai_layer_kinds_extension &kinds,
                  int32_t max_sequences, SlotOps ops);
  ~SlotCheckpoints();
  SlotCheckpoints(const SlotCheckpoints &) = delete;
  SlotCheckpoints &operator=(const SlotCheckpoints &) = delete;

  // A step that may be cut back (verifying a draft) is about to run on
  // sequence `id` (in `slot`): keep its state as it is now.
  void before_cut_back_step(int32_t id, int32_t slot);
  // Sequence `id` (in `slot`) ran `tokens` in an ended step (`may_cut_back`:
  // one announced by before_cut_back_step).
  void advanced(int32_t id, int32_t slot, std::span<const int32_t> tokens,
                bool may_cut_back = false);
  // Cuts sequence `id` (in `slot`) back to n_keep positions.
  void truncate(int32_t id, int32_t slot, int32_t n_keep);
  // `to` (in to_slot) was given the first tokens.size() positions of `from`
  // by slot_copy, whose tokens they are: brings its state there too.
  void copied_prefix(int32_t from, int32_t to, int32_t to_slot, std::span<const int32_t> tokens);

private:
  struct Saved {
    int32_t position = 0;
    int32_t id = 0;
  };
  struct Sequence {
    std::vector<int32_t> tokens;
    std::vector<Saved> checkpoints; // by position
  };

  Sequence &sequence(int32_t id);
  void save(Sequence &s, int32_t slot);
  void drop_after(Sequence &s, int32_t position);
  // After a failed rebuild: the sequence keeps the tokens `slot` still holds.
  void follow_slot(Sequence &s, int32_t slot);
  // Brings `slot` (holding at least n of `tokens`) to the state after
  // tokens[0, n): from the last checkpoint of `s` at or before n, or from
  // empty, running the tokens after it again.
  void rebuild(const Sequence &s, std::span<const int32_t> tokens, int32_t slot, int32_t n);

  const PluginContext &context_;
  const bonsai_layer_kinds_extension &kinds_;
  SlotOps ops_;
  size_t per_sequence_ = 1;
  std::vector<Sequence> sequences_; // by id
};

} // namespace bonsai::host
