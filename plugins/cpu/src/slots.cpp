#include "slots.hpp"

#include <algorithm>
#include <cstring>

#include "bonsai/plugin/sequence_checks.hpp"
#include "bonsai/plugin/slot_table.hpp"
#include "plugin_error.hpp"

namespace bonsai::cpu {

int32_t slot_create(Context &ctx) {
  BoundModel &m = bound_model(ctx, "slot_create");
  ctx.step.close();
  m.slots.next_id(); // refuses before allocating when every slot is in use
  return m.slots.add(make_kv_cache(m.dims, m.max_context, m.slots.own().type));
}

void slot_copy(Context &ctx, int32_t from, int32_t to, int32_t n_positions) {
  BoundModel &m = bound_model(ctx, "slot_copy");
  const KvCache &src = m.slots.at(from, "slot_copy");
  KvCache &dst = m.slots.at(to, "slot_copy");
  check_slot_copy(from, to, n_positions, src.length);
  ctx.step.close();
  // Each head's positions are contiguous: one copy per layer, head and tensor.
  const size_t bytes = static_cast<size_t>(n_positions) * src.position_bytes();
  for (int layer = 0; layer < m.dims.n_kv_layers; ++layer)
    for (int head = 0; head < src.n_head_kv; ++head) {
      std::memcpy(dst.k_at(layer, head, 0), src.k_at(layer, head, 0), bytes);
      std::memcpy(dst.v_at(layer, head, 0), src.v_at(layer, head, 0), bytes);
    }
  dst.length = n_positions;
  // A recurrent state comes along only with the whole sequence; a prefix
  // leaves `dst` needing a checkpoint (n == 0 is the zero state).
  if (!dst.recurrent.empty()) {
    if (n_positions == src.length && src.state_ready()) {
      std::copy_n(src.recurrent.data(), src.recurrent.floats(), dst.recurrent.data());
      dst.recurrent.position = n_positions;
    } else if (n_positions == 0) {
      dst.recurrent.zero();
    } else {
      dst.recurrent.position = -1;
    }
  }
}

} // namespace bonsai::cpu
