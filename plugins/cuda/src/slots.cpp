#include "slots.hpp"

#include "bonsai/plugin/sequence_checks.hpp"
#include "bonsai/plugin/slot_table.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {

int32_t slot_create(Context &ctx) {
  BoundModel &m = bound_model(ctx, "slot_create");
  discard_step(ctx);
  m.slots.next_id(); // refuses before allocating when every slot is in use
  return m.slots.add(make_kv_slot(*ctx.device, m));
}

void slot_copy(Context &ctx, int32_t from, int32_t to, int32_t n_positions) {
  BoundModel &m = bound_model(ctx, "slot_copy");
  const KvSlot &src = m.slots.at(from, "slot_copy");
  KvSlot &dst = m.slots.at(to, "slot_copy");
  check_slot_copy(from, to, n_positions, src.length);
  discard_step(ctx);
  // Each head's positions are contiguous: one copy per layer, tensor and head.
  const ModelDims &d = m.dims;
  const size_t head_bytes = static_cast<size_t>(m.max_context) * d.head_dim * m.kv_bytes;
  const size_t bytes = static_cast<size_t>(n_positions) * d.head_dim * m.kv_bytes;
  for (int layer = 0; layer < d.n_kv_layers; ++layer)
    for (int head = 0; head < d.n_head_kv; ++head) {
      const size_t offset = head * head_bytes;
      ctx.device->copy(dst.keys(layer) + offset, src.keys(layer) + offset, bytes);
      ctx.device->copy(dst.values(layer) + offset, src.values(layer) + offset, bytes);
    }
  // A recurrent state comes along only with the whole sequence; a prefix
  // leaves `dst` needing a checkpoint (n == 0 is the zero state).
  // The state goes into dst's other copy, made current only once every
  // copy has landed: a failed call leaves dst's state as it was.
  RecurrentState &state = dst.recurrent;
  const bool whole = !state.empty() && n_positions == src.length && src.state_ready();
  if (whole)
    ctx.device->copy(state.layer(1 - state.current, 0), src.recurrent.data(), state.bytes());
  ctx.device->synchronize(); // a failed copy is this call's error
  dst.length = n_positions;
  if (state.empty())
    return;
  if (whole) {
    state.current = 1 - state.current;
    state.position = n_positions;
  } else if (n_positions == 0) {
    state.zero();
  } else {
    state.position = -1;
  }
}

} // namespace bonsai::cuda
