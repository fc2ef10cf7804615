#include "checkpoints.hpp"

#include <climits>

#include "bonsai/plugin/slot_table.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

const Checkpoint &find(const BoundModel &m, int32_t id, const char *call) {
  auto it = m.checkpoints.find(id);
  if (it == m.checkpoints.end())
    fail_invalid(
        strformat("%s: checkpoint %d does not exist (checkpoint_save makes them)", call, id));
  return it->second;
}

} // namespace

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
  if (m.next_checkpoint == INT32_MAX)
    fail(BONSAI_ERR_OUT_OF_MEMORY, "checkpoint_save: checkpoint ids are used up");
  const RecurrentState &state = kv.recurrent;
  Checkpoint checkpoint;
  checkpoint.position = kv.length;
  // At least one word, so that a model without DeltaNet layers (0 bytes)
  // still gets a checkpoint, as the header promises.
  checkpoint.state =
      DeviceBuffer(*ctx.device, state.empty() ? 4 : state.bytes(), "recurrent state checkpoint");
  discard_step(ctx); // waits for an open step's kernels before the copy reads the state
  if (!state.empty()) {
    ctx.device->copy(checkpoint.state.get(), state.data(), state.bytes());
    ctx.device->synchronize(); // a failed copy is this call's error
  }
  const int32_t id = m.next_checkpoint;
  m.checkpoints.emplace(id, std::move(checkpoint));
  ++m.next_checkpoint;
  return id;
}

void checkpoint_restore(Context &ctx, int32_t checkpoint, int32_t slot) {
  BoundModel &m = bound_model(ctx, "checkpoint_restore");
  const Checkpoint &saved = find(m, checkpoint, "checkpoint_restore");
  KvSlot &kv = m.slots.at(slot, "checkpoint_restore");
  if (kv.length < saved.position)
    fail_invalid(strformat("checkpoint_restore: slot %d holds %d positions, fewer than "
                           "checkpoint %d's %d",
                           slot, kv.length, checkpoint, saved.position));
  discard_step(ctx);
  RecurrentState &state = kv.recurrent;
  if (!state.empty()) {
    ctx.device->copy(state.data(), saved.state.get(), state.bytes());
    ctx.device->synchronize();
  }
  kv.length = saved.position;
  state.position = saved.position;
}

void checkpoint_free(Context &ctx, int32_t checkpoint) {
  BoundModel &m = bound_model(ctx, "checkpoint_free");
  find(m, checkpoint, "checkpoint_free");
  m.checkpoints.erase(checkpoint);
}

int32_t checkpoint_position(const Context &ctx, int32_t checkpoint) {
  return find(bound_model(ctx, "checkpoint_position"), checkpoint, "checkpoint_position").position;
}

} // namespace bonsai::cuda
