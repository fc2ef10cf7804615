#include "checkpoints.hpp"

#include <algorithm>
#include <new>

#include "plugin_error.hpp"

namespace bonsai::cpu {
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
  if (m.next_checkpoint == INT32_MAX)
    fail(BONSAI_ERR_OUT_OF_MEMORY, "checkpoint_save: checkpoint ids are used up");
  const RecurrentState &state = kv.recurrent;
  Checkpoint checkpoint;
  checkpoint.position = kv.length;
  checkpoint.state = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(state.floats()));
  if (!state.empty())
    std::copy_n(state.data(), state.floats(), checkpoint.state.get());
  const int32_t id = m.next_checkpoint;
  m.checkpoints.emplace(id, std::move(checkpoint));
  ++m.next_checkpoint;
  discard_step(ctx); // only once it has succeeded: a failed call changes nothing
  return id;
}

void checkpoint_restore(Context &ctx, int32_t checkpoint, int32_t slot) {
  BoundModel &m = bound_model(ctx, "checkpoint_restore");
  const Checkpoint &saved = find(m, checkpoint, "checkpoint_restore");
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
  find(m, checkpoint, "checkpoint_free");
  m.checkpoints.erase(checkpoint);
}

int32_t checkpoint_position(const Context &ctx, int32_t checkpoint) {
  return find(bound_model(ctx, "checkpoint_position"), checkpoint, "checkpoint_position").position;
}

} // namespace bonsai::cpu
