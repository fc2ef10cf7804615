#include "slots.hpp"

#include <algorithm>
#include <cstring>

#include "plugin_error.hpp"

namespace bonsai::cpu {
namespace {

void truncate_cache(KvCache &kv, int32_t n_keep, const char *call) {
  if (n_keep < 0 || n_keep > kv.length)
    fail_invalid(strformat("%s: n_keep %d is outside [0, length = %d]", call, n_keep, kv.length));
  kv.length = n_keep;
}

} // namespace

BoundModel &require_model(const Context &ctx, const char *call) {
  if (!ctx.model)
    fail_state(strformat("%s: no model is bound; call bind_model first", call));
  return *ctx.model;
}

KvCache &slot_cache(const BoundModel &m, int32_t slot, const char *call) {
  if (slot < 0 || static_cast<size_t>(slot) >= m.slots.size() || !m.slots[slot])
    fail_invalid(strformat("%s: slot %d does not exist (slot_create makes slots)", call, slot));
  return *m.slots[static_cast<size_t>(slot)];
}

void kv_reset(Context &ctx) {
  BoundModel &m = require_model(ctx, "kv_reset");
  ctx.step.close();
  m.slots[0]->length = 0;
}

void kv_truncate(Context &ctx, int32_t n_keep) {
  BoundModel &m = require_model(ctx, "kv_truncate");
  ctx.step.close();
  truncate_cache(*m.slots[0], n_keep, "kv_truncate");
}

int32_t kv_length(const Context &ctx) {
  return require_model(ctx, "kv_length").slots[0]->length;
}

int32_t slot_create(Context &ctx) {
  BoundModel &m = require_model(ctx, "slot_create");
  ctx.step.close();
  const auto free_id = std::find(m.slots.begin(), m.slots.end(), nullptr);
  if (free_id == m.slots.end() && m.slots.size() >= static_cast<size_t>(kMaxSlots))
    fail_invalid(strformat("slot_create: all %d slots are in use", kMaxSlots));
  std::unique_ptr<KvCache> cache =
      make_kv_cache(m.dims, m.max_context, m.slots[0]->type); // slot 0 always exists
  if (free_id != m.slots.end()) {
    *free_id = std::move(cache);
    return static_cast<int32_t>(free_id - m.slots.begin());
  }
  m.slots.push_back(std::move(cache));
  return static_cast<int32_t>(m.slots.size() - 1);
}

void slot_free(Context &ctx, int32_t slot) {
  BoundModel &m = require_model(ctx, "slot_free");
  slot_cache(m, slot, "slot_free");
  if (slot == 0)
    fail_invalid("slot_free: slot 0 is the context's own cache and cannot be freed");
  ctx.step.close();
  m.slots[static_cast<size_t>(slot)].reset();
  while (m.slots.size() > 1 && !m.slots.back())
    m.slots.pop_back();
}

void slot_truncate(Context &ctx, int32_t slot, int32_t n_keep) {
  BoundModel &m = require_model(ctx, "slot_truncate");
  KvCache &kv = slot_cache(m, slot, "slot_truncate");
  ctx.step.close();
  truncate_cache(kv, n_keep, "slot_truncate");
}

void slot_copy(Context &ctx, int32_t from, int32_t to, int32_t n_positions) {
  BoundModel &m = require_model(ctx, "slot_copy");
  const KvCache &src = slot_cache(m, from, "slot_copy");
  KvCache &dst = slot_cache(m, to, "slot_copy");
  if (from == to)
    fail_invalid(strformat("slot_copy: from and to are both slot %d", from));
  if (n_positions < 0 || n_positions > src.length)
    fail_invalid(strformat("slot_copy: n_positions %d is outside [0, length of slot %d = %d]",
                           n_positions, from, src.length));
  ctx.step.close();
  // Each head's positions are contiguous: one copy per layer, head and tensor.
  const size_t bytes = static_cast<size_t>(n_positions) * src.position_bytes();
  for (int layer = 0; layer < m.dims.n_layer; ++layer)
    for (int head = 0; head < src.n_head_kv; ++head) {
      std::memcpy(dst.k_at(layer, head, 0), src.k_at(layer, head, 0), bytes);
      std::memcpy(dst.v_at(layer, head, 0), src.v_at(layer, head, 0), bytes);
    }
  dst.length = n_positions;
}

int32_t slot_length(const Context &ctx, int32_t slot) {
  return slot_cache(require_model(ctx, "slot_length"), slot, "slot_length").length;
}

} // namespace bonsai::cpu
