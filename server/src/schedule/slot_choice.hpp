#pragma once
// The prompt cache: which free slot takes a new prompt, and how much of the
// prompt it can skip. Every slot keeps the tokens of its last request in its
// KV cache; a new prompt goes to the free slot sharing the longest prefix
// with it (the least recently used on a tie), and when another slot, busy
// or free, shares a longer prefix, that prefix is copied over first. Only
// slots whose cache holds the same tenant's tokens count: a prefix shared
// with another tenant's prompt is never reused, so neither its speed nor
// cached_tokens tells one tenant what another asked.
#include <cstdint>
#include <optional>
#include <span>

namespace bonsai::server {

struct SlotView {
  bool busy = false;
  std::span<const int32_t> tokens; // what its KV cache holds
  uint64_t last_used = 0;          // larger = more recent
  uint64_t tenant = 0;             // whose tokens the cache holds
};

struct SlotChoice {
  int32_t slot = -1;
  int32_t keep = 0;       // positions of the slot's own cache to keep
  int32_t copy_from = -1; // a slot whose first copy_length tokens to copy in; -1: none
  int32_t copy_length = 0;
};

// nullopt when every slot is busy. At least the prompt's last token is left
// to evaluate (its logits start the generation).
std::optional<SlotChoice> choose_slot(std::span<const SlotView> slots,
                                      std::span<const int32_t> prompt, uint64_t tenant);

} // namespace bonsai::server
