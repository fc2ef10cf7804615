#pragma once
// When a qwen35 runner (the host's own layers or a plugin's) saves a copy of
// the recurrent state, and how many it keeps (docs/models.md, "Checkpoints").
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace bonsai::host::checkpoint_policy {

// Checkpoints may hold this much in all (27B: about 150 MiB of state each).
inline constexpr size_t kBudgetBytes = size_t{512} << 20;
inline constexpr size_t kMost = 8;
// Besides the end of every multi-token step, a checkpoint every this many
// positions of decoding, so a rollback never runs more again.
inline constexpr int32_t kInterval = 64;

// Whether a step of n_tokens that brought the sequence to `length` calls for
// a checkpoint there. A step that may be cut back (verifying a draft) has
// one from before it instead: at its end one would mostly be dropped at
// once, and the next such step saves where this one ends.
inline bool due(int32_t length, int32_t n_tokens, bool may_cut_back = false) {
  return (n_tokens > 1 && !may_cut_back) || (length - n_tokens) / kInterval != length / kInterval;
}

// How many checkpoints of state_bytes each to keep (at least one).
inline size_t capacity(size_t state_bytes) {
  return std::clamp(kBudgetBytes / std::max<size_t>(state_bytes, 1), size_t{1}, kMost);
}

} // namespace bonsai::host::checkpoint_policy
