#pragma once
// The plugin keeps every sequence's cache in a KV slot of one context and
// advances them in one multi-sequence step (ABI 1.1 sequences extension).
#include <memory>
#include <vector>

#include "generation/batch_runner.hpp"
#include "model/session_impl.hpp"
#include "model/slot_checkpoints.hpp"

namespace bonsai::host {

// The plugin's sequences extension with every function present, or nullptr.
const bonsai_sequences_extension *usable_sequences_extension(const bonsai_backend_api &api);

class SlotBatchRunner final : public BatchRunner {
public:
  // `session` has the model bound by the plugin; `ext` is its plugin's.
  // `kinds` (its layer-kinds extension) when the model has recurrent layers:
  // the runner then keeps checkpoints for up to max_sequences sequences.
  // With `mtp`, each sequence keeps an MTP track (its entries of the
  // layer, uploaded once here); throws InvalidArgument when the model or
  // the plugin cannot draft with it.
  SlotBatchRunner(std::unique_ptr<Session::Impl> session, const bonsai_sequences_extension &ext,
                  const bonsai_layer_kinds_extension *kinds = nullptr, int32_t max_sequences = 1,
                  bool mtp = false);

  void open(int32_t id) override;
  void close(int32_t id) override;
  void truncate(int32_t id, int32_t n_keep) override;
  void copy_prefix(int32_t from, int32_t to, std::span<const int32_t> from_tokens) override;
  void step(std::span<const BatchEntry> entries) override;
  bool steps_together() const override { return true; }
  int32_t length(int32_t id) const override;
  MtpTrack *mtp(int32_t id) override;

private:
  int32_t slot_of(int32_t id) const { return slot_of_.at(static_cast<size_t>(id)); }
  int32_t slot_length(int32_t slot) const;
  // Runs `tokens` on `slot` alone, without an LM head (rebuilding a state).
  void advance(int32_t slot, std::span<const int32_t> tokens);

  std::unique_ptr<Session::Impl> session_; // the context, its weights and the engine
  const bonsai_sequences_extension &ext_;
  std::vector<int32_t> slot_of_;                 // by sequence id; -1 when closed
  std::vector<int32_t> idle_slots_;              // made and emptied, waiting for a sequence
  std::unique_ptr<SlotCheckpoints> checkpoints_; // recurrent models only
  // With BatchOptions::mtp: the uploaded layer, a track per sequence id
  // (kept when closed, for the next sequence), and its hidden states.
  const bonsai_hidden_states_extension *hidden_states_ = nullptr;
  MtpHandles mtp_handles_;
  std::vector<std::unique_ptr<MtpTrack>> tracks_;
  std::vector<float> hidden_rows_;
  // Per step, kept to avoid reallocating.
  std::vector<size_t> order_; // entries in the order they go to the plugin
  std::vector<int32_t> first_row_;
  std::vector<bonsai_sequence_step> steps_;
  std::vector<int32_t> positions_;
  std::vector<float> head_rows_;
};

} // namespace bonsai::host
