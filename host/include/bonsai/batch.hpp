#pragma once
// Many sequences of one model advanced together (continuous batching): each
// step carries any mix of prompt chunks and single decode tokens from
// different sequences, and with a plugin that offers the ABI 1.1 sequences
// extension the weights are read once for all of them.
//
//   bonsai::Batch batch = engine.create_batch({.max_sequences = 4});
//   const int32_t a = batch.add_sequence(), b = batch.add_sequence();
//   std::vector<int32_t> prompt_a = engine.tokenize("Hello"), prompt_b = ...;
//   bonsai::SequenceInput inputs[] = {{a, prompt_a}, {b, prompt_b}};
//   bonsai::BatchLogits out = batch.step(inputs); // out.row(0): a's next-token logits
//
// A Batch is used by one thread at a time. It owns one plugin context; its
// sequences share the uploaded weights.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "bonsai/engine.hpp"

namespace bonsai {

struct BatchOptions {
  // Sequences open at once (>= 1). Each holds a KV cache of n_ctx positions.
  int32_t max_sequences = 8;
  // Weight upload progress; empty = EngineOptions::on_progress. Kept by the
  // batch and called again when it opens sessions of their own for sequences
  // past a plugin's slots, so what it captures must live as long as the batch.
  ProgressFn on_progress;
  // qwen35: keep each sequence's entries of the model's multi-token-
  // prediction layer, for draft_mtp() (its weights are uploaded once).
  // create_batch throws InvalidArgument when the model has no MTP layer.
  bool mtp = false;
};

// One sequence's part of a step.
struct SequenceInput {
  int32_t sequence = 0;            // an id from Batch::add_sequence()
  std::span<const int32_t> tokens; // appended at the sequence's position (>= 1 token)
  bool logits = true;              // return the logits of its last token
  // Return a row for every token instead (with `logits` set): what verifying
  // drafted tokens needs, the logits that follow each of them.
  bool all_logits = false;
};

// The logits a step returns, in input order: one row per input with `logits`
// set, or one per token for an input with `all_logits` too.
struct BatchLogits {
  int32_t n_vocab = 0;
  int32_t n_rows = 0;
  std::vector<float> values; // n_rows x n_vocab, row-major
  std::span<const float> row(int32_t i) const {
    return std::span<const float>(values).subspan(static_cast<size_t>(i) * n_vocab, n_vocab);
  }
};

class BONSAI_HOST_API Batch {
public:
  Batch(Batch &&) noexcept;
  Batch &operator=(Batch &&) noexcept;
  ~Batch();

  // A new empty sequence; its id is the lowest free one in [0, max_sequences).
  // InvalidArgument when max_sequences are open.
  int32_t add_sequence();
  // Ends a sequence; its id and cache are reused by a later add_sequence().
  void remove_sequence(int32_t sequence);
  // Makes `to` hold the first n tokens of `from` (a shared prompt prefix),
  // copied between KV caches when the plugin can, else evaluated again.
  // 0 <= n <= position(from); from != to.
  void copy_prefix(int32_t from, int32_t to, int32_t n);
  // Keeps the first n positions of a sequence (0 <= n <= position()).
  void truncate(int32_t sequence, int32_t n);
  int32_t position(int32_t sequence) const;
  // The ids in the sequence's KV cache, in order.
  const std::vector<int32_t> &tokens(int32_t sequence) const;

  // Advances every input's sequence by its tokens, all in one plugin step:
  // the tokens together must be at most n_batch, each sequence at most once.
  // Throws InvalidArgument (unknown or repeated sequence, empty input, id out
  // of range, more than n_batch tokens), ContextFullError (a sequence would
  // pass n_ctx), PluginError; in each case before any sequence changes.
  BatchLogits step(std::span<const SequenceInput> inputs);

  // With BatchOptions::mtp: up to `max` tokens the model's MTP layer
  // proposes after the sequence's tokens and `next` (the token about to be
  // fed), chained as in Session::generate (docs/speculative.md): its most
  // likely token each, stopping before the first whose probability is below
  // p_min. Fewer near the end of the context window. InvalidArgument for a
  // batch without MTP, a closed sequence, `next` outside the vocabulary,
  // max < 0 or p_min outside [0, 1].
  std::vector<int32_t> draft_mtp(int32_t sequence, int32_t next, int32_t max, float p_min = 0.0f);

  int32_t max_sequences() const;
  int32_t n_ctx() const;   // positions per sequence
  int32_t n_batch() const; // tokens per step
  // True when the plugin advances the sequences in one step (ABI 1.1
  // sequences extension); false when the host steps them one after another,
  // each with its own plugin context (correct, not faster).
  bool steps_together() const;

  struct Impl; // internal
  explicit Batch(std::unique_ptr<Impl> impl);

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace bonsai
