#include "schedule/slot_choice.hpp"

#include <algorithm>

namespace bonsai::server {
namespace {

// Tokens of `cached` usable for `prompt`: their common prefix, leaving the
// prompt's last token to evaluate.
int32_t usable_prefix(std::span<const int32_t> cached, std::span<const int32_t> prompt) {
  const auto mismatch = std::mismatch(cached.begin(), cached.end(), prompt.begin(), prompt.end());
  const auto common = static_cast<size_t>(mismatch.first - cached.begin());
  return static_cast<int32_t>(std::min(common, prompt.empty() ? 0 : prompt.size() - 1));
}

} // namespace

std::optional<SlotChoice> choose_slot(std::span<const SlotView> slots,
                                      std::span<const int32_t> prompt, uint64_t tenant) {
  const auto shared_prefix = [&](const SlotView &slot) {
    return slot.tenant == tenant ? usable_prefix(slot.tokens, prompt) : 0;
  };
  std::optional<SlotChoice> best;
  uint64_t best_last_used = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].busy)
      continue;
    const int32_t keep = shared_prefix(slots[i]);
    if (!best || keep > best->keep || (keep == best->keep && slots[i].last_used < best_last_used)) {
      best = SlotChoice{static_cast<int32_t>(i), keep, -1, 0};
      best_last_used = slots[i].last_used;
    }
  }
  if (!best)
    return best;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (static_cast<int32_t>(i) == best->slot)
      continue;
    const int32_t shared = shared_prefix(slots[i]);
    if (shared > std::max(best->keep, best->copy_length)) {
      best->copy_from = static_cast<int32_t>(i);
      best->copy_length = shared;
    }
  }
  return best;
}

} // namespace bonsai::server
