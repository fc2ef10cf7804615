#include "checkpoints.hpp"

#include "bonsai/plugin/slot_table.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {

uint64_t recurrent_state_bytes(const Context &ctx) {
  return bound_model(ctx, "state_bytes").slots.own().recurrent.bytes();
}

int32_t checkpoint_save(Context &ctx, int32_t slot) {
  BoundModel &m = bound_model(ctx, "checkpoint_save");
  const KvSlot &kv = m.slots.at(slot, "checkpoint_save");
  if (!kv.state_ready())
    fail_state(strformat("checkpoint_save: slot %d was cut back and its recurrent state is not "
                         "at its length %d",
                         slot, kv.length));
  m.checkpoints.check_room("checkpoint_save");
  const RecurrentState &state = kv.recurrent;
  // At least one word, so that a model without DeltaNet layers (0 bytes)
  // still gets a checkpoint, as the header promises.
  DeviceBuffer copy(*ctx.device, state.empty() ? 4 : state.bytes(), "recurrent state checkpoint");
  // An open step writes only the other copy, and the stream orders this
  // copy after its kernels.
  if (!state.empty()) {
    ctx.device->copy(copy.get(), state.data(), state.bytes());
    ctx.device->synchronize(); // a failed copy is this call's error
  }
  const int32_t id = m.checkpoints.add(kv.length, std::move(copy));
  discard_step(ctx); // only once it has succeeded: a failed call changes nothing
  return id;
}

void checkpoint_restore(Context &ctx, int32_t checkpoint, int32_t slot) {
  BoundModel &m = bound_model(ctx, "checkpoint_restore");
  const auto &saved = m.checkpoints.at(checkpoint, "checkpoint_restore");
  KvSlot &kv = m.slots.at(slot, "checkpoint_restore");
  if (kv.length < saved.position)
    fail_invalid(strformat("checkpoint_restore: slot %d holds %d positions, fewer than "
                           "checkpoint %d's %d",
                           slot, kv.length, checkpoint, saved.position));
  // Into the other copy, made current once it has landed: a failed copy
  // leaves the slot as it was (the open step is discarded first, since its
  // kernels write that copy).
  discard_step(ctx);
  RecurrentState &state = kv.recurrent;
  if (!state.empty()) {
    ctx.device->copy(state.layer(1 - state.current, 0), saved.state.get(), state.bytes());
    ctx.device->synchronize();
    state.current = 1 - state.current;
  }
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

} // namespace bonsai::cuda
