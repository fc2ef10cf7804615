#pragma once
// How a Batch runs its sequences, independent of who keeps their caches: the
// plugin's KV slots (sequences extension) or one session per sequence.
#include <cstdint>
#include <span>

#include "model/mtp_track.hpp"

namespace bonsai::host {

// One sequence's part of a step, validated by the Batch.
struct BatchEntry {
  int32_t sequence = 0;
  std::span<const int32_t> tokens;
  int32_t first_pos = 0;   // the sequence's position before the step
  float *logits = nullptr; // n_vocab floats for its last token, or NULL
  bool all_rows = false;   // `logits` holds a row for every token instead
};

class BatchRunner {
public:
  virtual ~BatchRunner() = default;
  // Sequence `id` starts, empty (ids are < max_sequences).
  virtual void open(int32_t id) = 0;
  // Sequence `id` ends; its cache may be reused.
  virtual void close(int32_t id) = 0;
  virtual void truncate(int32_t id, int32_t n_keep) = 0;
  // `to` (open) holds the first n of `from`'s tokens, `from_tokens`.
  virtual void copy_prefix(int32_t from, int32_t to, std::span<const int32_t> from_tokens) = 0;
  // Runs the entries (tokens together <= n_batch) and fills their logits.
  // Throws PluginError.
  virtual void step(std::span<const BatchEntry> entries) = 0;
  virtual bool steps_together() const = 0;
  // Positions in sequence `id`'s cache (what a failed truncate or copy left).
  virtual int32_t length(int32_t id) const = 0;
  // Sequence `id`'s MTP track (open), which every step feeds, when the
  // batch was made with BatchOptions::mtp; else nullptr.
  virtual MtpTrack *mtp(int32_t id) = 0;
};

} // namespace bonsai::host
