#include "checkpoints.hpp"

#include <algorithm>
#include <new>

#include "plugin_error.hpp"

namespace bonsai::cpu {

uint64_t recurrent_state_bytes(const Context &ctx) {
  const BoundModel &m = bound_model(ctx, "state_bytes");
  return static_cast<uint64_t>(m.slots.own().recurrent.floats()) * sizeof(float);
}

int32_t checkpoint_save(Context &ctx, int32_t slot) {
  BoundModel &m = bound_model(ctx, "checkpoint_save");
  const KvCache &kv = m.slots.at(slot, "checkpoint_save");
  if (!kv.state_ready())
    fail_state(strformat("checkpoint_save: slot %d was cut back and its recurrent state is not "
                         "at its length %d",
                         slot, kv.length));
  m.checkpoints.check_room("checkpoint_save");
  const RecurrentState &state = kv.recurrent;
  auto copy = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(state.floats()));
  if (!state.empty())
    std::copy_n(state.data(), state.floats(), copy.get());
  const int32_t id = m.checkpoints.add(kv.length, std::move(copy));
  discard_step(ctx); // only once it has succeeded: a failed call changes nothing
  return id;
}

void checkpoint_restore(Context &ctx, int32_t checkpoint, int32_t slot) {
  BoundModel &m = bound_model(ctx, "checkpoint_restore");
  const auto &saved = m.checkpoints.at(checkpoint, "checkpoint_restore");
  KvCache &kv = m.slots.at(slot, "checkpoint_restore");
  if (kv.length < saved.position)
    fail_invalid(strformat("checkpoint_restore: slot %d holds %d positions, fewer than "
                           "checkpoint %d's %d",
                           slot, kv.length, checkpoint, saved.position));
  discard_step(ctx);
  RecurrentState &state = kv.recurrent;
  if (!state.empty())
    std::copy_n(saved.state.get(), state.floats(), state.data());
  kv.length = saved.position;
  state.position = saved.position;
}

void checkpoint_free(Context &ctx, int32_t checkpoint) {
  BoundModel &m = bound_model(ctx, "checkpoint_free");
  m.checkpoints.erase(checkpoint, "checkpoint_free");
}

int32_t checkpoint_position(const Context &ctx, int32_t checkpoint) {
  return bound_model(ctx, "checkpoint_position")
      .checkpoints.at(checkpoint, "checkpoint_position")
      .position;
}

} // namespace bonsai::cpu
