#pragma once
// Drives the step protocol of a bound plugin context: begin_step, every
// layer, the LM head, end_step. Failures throw std::runtime_error carrying
// the call, its status and the plugin's last_error.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bonsai/bonsai_backend.h"

namespace bonsai::test {

class StepRunner {
public:
  StepRunner(const bonsai_backend_api &api, bonsai_context *ctx, int n_layer, int n_vocab)
      : api_(api), ctx_(ctx), n_layer_(n_layer), n_vocab_(n_vocab) {}

  // Appends `tokens` at positions kv_length.. in one step and returns the
  // logits of every token ([n][n_vocab]); with want_logits false, returns
  // nothing and fills *argmax (when given) without asking for logits.
  // With last_only, the LM head runs for the last token alone (as a host
  // does after a prompt) and the results cover that token only.
  std::vector<float> step(const std::vector<int32_t> &tokens, bool want_logits = true,
                          std::vector<int32_t> *argmax = nullptr, bool last_only = false) const {
    int32_t first_pos = 0;
    check(api_.kv_length(ctx_, &first_pos), "kv_length");
    std::vector<int32_t> positions(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i)
      positions[i] = first_pos + static_cast<int32_t>(i);
    bonsai_step_desc step{};
    step.struct_size = sizeof(step);
    step.n_tokens = static_cast<int32_t>(tokens.size());
    step.token_ids = tokens.data();
    step.positions = positions.data();
    check(api_.begin_step(ctx_, &step), "begin_step");
    for (int l = 0; l < n_layer_; ++l)
      check(api_.encode_layer(ctx_, l), "encode_layer " + std::to_string(l));
    std::vector<float> logits;
    bonsai_lm_head_desc head{};
    head.struct_size = sizeof(head);
    const size_t n_outputs = last_only ? 1 : tokens.size();
    head.first_token = static_cast<int32_t>(tokens.size() - n_outputs);
    head.n_outputs = static_cast<int32_t>(n_outputs);
    if (want_logits) {
      logits.resize(n_outputs * static_cast<size_t>(n_vocab_));
      head.logits = logits.data();
    }
    if (argmax != nullptr) {
      argmax->assign(n_outputs, -1);
      head.argmax = argmax->data();
    }
    if (head.logits != nullptr || head.argmax != nullptr)
      check(api_.lm_head(ctx_, &head), "lm_head");
    check(api_.end_step(ctx_), "end_step");
    return logits;
  }

  void check(bonsai_status status, const std::string &call) const {
    if (status != BONSAI_OK)
      throw std::runtime_error(call + " failed with status " + std::to_string(status) + ": " +
                               api_.last_error(ctx_));
  }

private:
  const bonsai_backend_api &api_;
  bonsai_context *ctx_;
  int n_layer_;
  int n_vocab_;
};

// The sequences extension of a plugin, or nullptr when it has none.
inline const bonsai_sequences_extension *sequences_extension(const bonsai_backend_api &api) {
  const bonsai_extension *e = bonsai_find_extension(&api, BONSAI_EXTENSION_SEQUENCES);
  if (e == nullptr || e->struct_size < sizeof(bonsai_sequences_extension))
    return nullptr;
  return reinterpret_cast<const bonsai_sequences_extension *>(e);
}

// The layer-kinds extension of a plugin (ABI 1.2), or nullptr when it has
// none. ABI 1.2's size, not sizeof: a later plugin's struct is longer.
inline const bonsai_layer_kinds_extension *layer_kinds_extension(const bonsai_backend_api &api) {
  constexpr size_t kV12Size = offsetof(bonsai_layer_kinds_extension, checkpoint_position) +
                              sizeof(bonsai_layer_kinds_extension::checkpoint_position);
  const bonsai_extension *e = bonsai_find_extension(&api, BONSAI_EXTENSION_LAYER_KINDS);
  if (e == nullptr || e->struct_size < kV12Size)
    return nullptr;
  return reinterpret_cast<const bonsai_layer_kinds_extension *>(e);
}

// Drives multi-sequence steps (the sequences extension): each sequence's
// tokens go to its slot at positions slot_length.. and the LM head runs for
// every token of the step.
class BatchStepRunner {
public:
  struct Sequence {
    int32_t slot = 0;
    std::vector<int32_t> tokens;
  };

  BatchStepRunner(const bonsai_backend_api &api, const bonsai_sequences_extension &ext,
                  bonsai_context *ctx, int n_layer, int n_vocab)
      : runner_(api, ctx, n_layer, n_vocab), api_(api), ext_(ext), ctx_(ctx), n_layer_(n_layer),
        n_vocab_(n_vocab) {}

  // One step over `sequences`; returns each sequence's logits ([n][n_vocab]).
  std::vector<std::vector<float>> step(const std::vector<Sequence> &sequences) const {
    std::vector<std::vector<int32_t>> positions(sequences.size());
    std::vector<bonsai_sequence_step> entries(sequences.size());
    int32_t total = 0;
    for (size_t i = 0; i < sequences.size(); ++i) {
      int32_t length = 0;
      runner_.check(ext_.slot_length(ctx_, sequences[i].slot, &length), "slot_length");
      for (size_t t = 0; t < sequences[i].tokens.size(); ++t)
        positions[i].push_back(length + static_cast<int32_t>(t));
      bonsai_sequence_step &e = entries[i];
      e.struct_size = sizeof e;
      e.slot = sequences[i].slot;
      e.n_tokens = static_cast<int32_t>(sequences[i].tokens.size());
      e.token_ids = sequences[i].tokens.data();
      e.positions = positions[i].data();
      total += e.n_tokens;
    }
    bonsai_batch_step_desc batch{};
    batch.struct_size = sizeof batch;
    batch.n_sequences = static_cast<int32_t>(entries.size());
    batch.sequences = entries.data();
    runner_.check(ext_.begin_batch(ctx_, &batch), "begin_batch");
    for (int l = 0; l < n_layer_; ++l)
      runner_.check(api_.encode_layer(ctx_, l), "encode_layer " + std::to_string(l));
    std::vector<float> logits(static_cast<size_t>(total) * static_cast<size_t>(n_vocab_));
    bonsai_lm_head_desc head{};
    head.struct_size = sizeof head;
    head.first_token = 0;
    head.n_outputs = total;
    head.logits = logits.data();
    runner_.check(api_.lm_head(ctx_, &head), "lm_head");
    runner_.check(api_.end_step(ctx_), "end_step");
    std::vector<std::vector<float>> out;
    size_t row = 0;
    for (const Sequence &s : sequences) {
      const size_t n = s.tokens.size() * static_cast<size_t>(n_vocab_);
      out.emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(row),
                       logits.begin() + static_cast<std::ptrdiff_t>(row + n));
      row += n;
    }
    return out;
  }

private:
  StepRunner runner_; // for check()
  const bonsai_backend_api &api_;
  const bonsai_sequences_extension &ext_;
  bonsai_context *ctx_;
  int n_layer_;
  int n_vocab_;
};

} // namespace bonsai::test
