#pragma once
// The KV slots of a bound model, by id (ABI 1.1 sequences extension): slot 0
// is the context's own cache and always exists; slot_create's ids start at 1
// and a freed id is given out again. `Cache` is the plugin's cache type with
// an `int32_t length` (positions cached). Lookups and misuse throw
// PluginError (INVALID_ARGUMENT) naming the call.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "bonsai/plugin/plugin_error.hpp"

namespace bonsai::plugin {

// Most slots one context holds, slot 0 included (each is a whole
// max_context cache, so memory usually runs out first).
inline constexpr int32_t kMaxSlots = 256;

template <class Cache> class SlotTable {
public:
  // Slot 0: set once at bind.
  void set_own(std::unique_ptr<Cache> own) {
    slots_.clear();
    slots_.push_back(std::move(own));
  }
  Cache &own() const { return *slots_.front(); }

  // A live slot; INVALID_ARGUMENT naming `call` when `slot` is not one.
  Cache &at(int32_t slot, const char *call) const {
    if (slot < 0 || static_cast<size_t>(slot) >= slots_.size() || !slots_[slot])
      fail_invalid(strformat("%s: slot %d does not exist (slot_create makes slots)", call, slot));
    return *slots_[static_cast<size_t>(slot)];
  }

  // The id the next add() takes; INVALID_ARGUMENT when every slot is in use
  // (checked before the plugin allocates a cache for it).
  int32_t next_id() const {
    const auto free_id = std::find(slots_.begin(), slots_.end(), nullptr);
    if (free_id == slots_.end() && slots_.size() >= static_cast<size_t>(kMaxSlots))
      fail_invalid(strformat("slot_create: all %d slots are in use", kMaxSlots));
    return static_cast<int32_t>(free_id - slots_.begin());
  }
  // Stores `cache` under next_id() and returns that id.
  int32_t add(std::unique_ptr<Cache> cache) {
    const int32_t id = next_id();
    if (static_cast<size_t>(id) == slots_.size())
      slots_.push_back(std::move(cache));
    else
      slots_[static_cast<size_t>(id)] = std::move(cache);
    return id;
  }

  // INVALID_ARGUMENT unless `slot` was made by add() and is live.
  void check_removable(int32_t slot) const {
    at(slot, "slot_free");
    if (slot == 0)
      fail_invalid("slot_free: slot 0 is the context's own cache and cannot be freed");
  }
  // Frees a slot made by add().
  void remove(int32_t slot) {
    check_removable(slot);
    slots_[static_cast<size_t>(slot)].reset();
    while (slots_.size() > 1 && !slots_.back())
      slots_.pop_back();
  }

private:
  std::vector<std::unique_ptr<Cache>> slots_;
};

// Keeps a cache's first n_keep positions (checked by the caller). A cache
// type with state that a length alone does not describe (a recurrent state,
// ABI 1.2) says what that means with its own cut_back().
template <class Cache> void cut_back(Cache &cache, int32_t n_keep) {
  if constexpr (requires { cache.cut_back(n_keep); })
    cache.cut_back(n_keep);
  else
    cache.length = n_keep;
}

// The context's bound model (`ctx.model`, null before bind_model);
// BAD_STATE naming `call` when there is none.
template <class Context> auto &bound_model(const Context &ctx, const char *call) {
  if (!ctx.model)
    fail_state(strformat("%s: no model is bound (call bind_model first)", call));
  return *ctx.model;
}

} // namespace bonsai::plugin
