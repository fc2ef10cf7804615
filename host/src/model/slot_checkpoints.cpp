#include "model/slot_checkpoints.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "bonsai/engine.hpp"
#include "common/log_internal.hpp"
#include "model/checkpoint_policy.hpp"

namespace bonsai::host {

SlotCheckpoints::SlotCheckpoints(const PluginContext &context,
                                 const bonsai_layer_kinds_extension &kinds, int32_t max_sequences,
                                 SlotOps ops)
    : context_(context), kinds_(kinds), ops_(std::move(ops)) {
  uint64_t bytes = 0;
  context_.check(kinds_.state_bytes(context_.get(), &bytes), "state_bytes");
  per_sequence_ = checkpoint_policy::capacity(static_cast<size_t>(bytes) *
                                              static_cast<size_t>(std::max(max_sequences, 1)));
}

SlotCheckpoints::~SlotCheckpoints() {
  for (const Sequence &s : sequences_)
    for (const Saved &saved : s.checkpoints)
      kinds_.checkpoint_free(context_.get(), saved.id); // the context frees them anyway
}

SlotCheckpoints::Sequence &SlotCheckpoints::sequence(int32_t id) {
  if (sequences_.size() <= static_cast<size_t>(id))
    sequences_.resize(static_cast<size_t>(id) + 1);
  return sequences_[static_cast<size_t>(id)];
}

void SlotCheckpoints::save(Sequence &s, int32_t slot) {
  const auto position = static_cast<int32_t>(s.tokens.size());
  if (!s.checkpoints.empty() && s.checkpoints.back().position == position)
    return;
  // Best effort: the step has ended, and a checkpoint missed (out of memory)
  // only means running more tokens again after a later cut.
  try {
    if (s.checkpoints.size() >= per_sequence_) {
      context_.check(kinds_.checkpoint_free(context_.get(), s.checkpoints.front().id),
                     "checkpoint_free");
      s.checkpoints.erase(s.checkpoints.begin());
    }
    Saved saved{position, 0};
    context_.check(kinds_.checkpoint_save(context_.get(), slot, &saved.id), "checkpoint_save");
    s.checkpoints.push_back(saved);
  } catch (const PluginError &error) {
    logger().warn("qwen35: no checkpoint of slot {} at position {}: {}", slot, position,
                  error.what());
  }
}

void SlotCheckpoints::follow_slot(Sequence &s, int32_t slot) {
  int32_t length = 0;
  try {
    length = ops_.length(slot);
  } catch (const PluginError &) {
    // The plugin cannot say either: keep nothing rather than a guess.
  }
  s.tokens.resize(std::min(s.tokens.size(), static_cast<size_t>(length)));
}

void SlotCheckpoints::drop_after(Sequence &s, int32_t position) {
  while (!s.checkpoints.empty() && s.checkpoints.back().position > position) {
    context_.check(kinds_.checkpoint_free(context_.get(), s.checkpoints.back().id),
                   "checkpoint_free");
    s.checkpoints.pop_back();
  }
}

void SlotCheckpoints::rebuild(const Sequence &s, std::span<const int32_t> tokens, int32_t slot,
                              int32_t n) {
  int32_t from = 0;
  const auto it = std::find_if(s.checkpoints.rbegin(), s.checkpoints.rend(),
                               [n](const Saved &saved) { return saved.position <= n; });
  if (it != s.checkpoints.rend()) {
    context_.check(kinds_.checkpoint_restore(context_.get(), it->id, slot),
                   fmt::format("checkpoint_restore({})", it->id));
    from = it->position;
    ops_.restored(slot, from);
  } else {
    ops_.reset(slot);
  }
  if (from < n)
    ops_.advance(slot, tokens.subspan(static_cast<size_t>(from), static_cast<size_t>(n - from)));
}

void SlotCheckpoints::before_cut_back_step(int32_t id, int32_t slot) {
  save(sequence(id), slot);
}

void SlotCheckpoints::advanced(int32_t id, int32_t slot, std::span<const int32_t> tokens,
                               bool may_cut_back) {
  Sequence &s = sequence(id);
  s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
  if (checkpoint_policy::due(static_cast<int32_t>(s.tokens.size()),
                             static_cast<int32_t>(tokens.size()), may_cut_back))
    save(s, slot);
}

void SlotCheckpoints::truncate(int32_t id, int32_t slot, int32_t n_keep) {
  Sequence &s = sequence(id);
  if (n_keep >= static_cast<int32_t>(s.tokens.size()))
    return;
  try {
    drop_after(s, n_keep);
    rebuild(s, s.tokens, slot, n_keep);
  } catch (...) {
    follow_slot(s, slot); // stopped part-way: keep what the slot holds
    throw;
  }
  s.tokens.resize(static_cast<size_t>(n_keep));
}

void SlotCheckpoints::copied_prefix(int32_t from, int32_t to, int32_t to_slot,
                                    std::span<const int32_t> tokens) {
  sequence(std::max(from, to)); // grows the table first: the references below stay valid
  Sequence &target = sequence(to);
  drop_after(target, -1);
  target.tokens.assign(tokens.begin(), tokens.end());
  const Sequence &source = sequence(from);
  const auto n = static_cast<int32_t>(tokens.size());
  try {
    if (n < static_cast<int32_t>(source.tokens.size())) // a whole slot's copy carries its state
      rebuild(source, tokens, to_slot, n);
  } catch (...) {
    follow_slot(target, to_slot);
    throw;
  }
  if (n > 0)
    save(target, to_slot);
}

} // namespace bonsai::host
