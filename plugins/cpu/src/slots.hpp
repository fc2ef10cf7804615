#pragma once
// KV slots: the context's own cache (slot 0, what kv_reset/kv_truncate/
// kv_length act on) and the extra ones of the sequences extension. Every
// function throws PluginError; all but the const ones discard an open step.
#include <cstdint>

#include "context.hpp"

namespace bonsai::cpu {

// Most slots a context holds at once, slot 0 included.
inline constexpr int32_t kMaxSlots = 256;

// The bound model; BAD_STATE naming `call` when there is none.
BoundModel &require_model(const Context &ctx, const char *call);
// The cache of a live slot; INVALID_ARGUMENT naming `call` when `slot` is not one.
KvCache &slot_cache(const BoundModel &m, int32_t slot, const char *call);

void kv_reset(Context &ctx);
void kv_truncate(Context &ctx, int32_t n_keep);
int32_t kv_length(const Context &ctx);

int32_t slot_create(Context &ctx);
void slot_free(Context &ctx, int32_t slot);
void slot_truncate(Context &ctx, int32_t slot, int32_t n_keep);
void slot_copy(Context &ctx, int32_t from, int32_t to, int32_t n_positions);
int32_t slot_length(const Context &ctx, int32_t slot);

} // namespace bonsai::cpu
