#include "generation/slot_batch_runner.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "model/mtp_attach.hpp"
#include "plugins/hidden_states.hpp"

namespace bonsai::host {

const bonsai_sequences_extension *usable_sequences_extension(const bonsai_backend_api &api) {
  const bonsai_extension *e = bonsai_find_extension(&api, BONSAI_EXTENSION_SEQUENCES);
  if (e == nullptr || e->struct_size < sizeof(bonsai_sequences_extension))
    return nullptr;
  const auto *ext = reinterpret_cast<const bonsai_sequences_extension *>(e);
  const bool complete = ext->slot_create != nullptr && ext->slot_free != nullptr &&
                        ext->slot_truncate != nullptr && ext->slot_copy != nullptr &&
                        ext->slot_length != nullptr && ext->begin_batch != nullptr &&
                        ext->max_slots >= 1;
  return complete ? ext : nullptr;
}

SlotBatchRunner::SlotBatchRunner(std::unique_ptr<Session::Impl> session,
                                 const bonsai_sequences_extension &ext,
                                 const bonsai_layer_kinds_extension *kinds, int32_t max_sequences,
                                 bool mtp)
    : session_(std::move(session)), ext_(ext), idle_slots_{0} {
  const PluginContext &context = *session_->context;
  if (mtp) {
    hidden_states_ = hidden_states_extension(context.api());
    check_mtp_usable(*session_->engine, hidden_states_ != nullptr, context.library().name(),
                     "create_batch");
    mtp_handles_ = upload_mtp(*session_->engine, context, session_->weights.desc.lm_head);
  }
  if (kinds == nullptr)
    return;
  SlotCheckpoints::SlotOps ops;
  ops.reset = [this, &context](int32_t slot) {
    context.check(ext_.slot_truncate(context.get(), slot, 0), "slot_truncate(0)");
  };
  ops.length = [this](int32_t slot) { return slot_length(slot); };
  ops.advance = [this](int32_t slot, std::span<const int32_t> tokens) { advance(slot, tokens); };
  ops.restored = [](int32_t, int32_t) {}; // the plugin keeps the slots' lengths
  checkpoints_ = std::make_unique<SlotCheckpoints>(context, *kinds, max_sequences, std::move(ops));
}

int32_t SlotBatchRunner::slot_length(int32_t slot) const {
  const PluginContext &context = *session_->context;
  int32_t length = 0;
  context.check(ext_.slot_length(context.get(), slot, &length), "slot_length");
  return length;
}

int32_t SlotBatchRunner::length(int32_t id) const {
  return slot_length(slot_of(id));
}

void SlotBatchRunner::advance(int32_t slot, std::span<const int32_t> tokens) {
  const PluginContext &context = *session_->context;
  const auto n_batch = static_cast<size_t>(session_->engine->options.n_batch);
  const auto n_layer = static_cast<int32_t>(session_->engine->spec.hparams.n_layer);
  const int32_t length = slot_length(slot);
  for (size_t done = 0; done < tokens.size();) {
    const size_t n = std::min(n_batch, tokens.size() - done);
    positions_.resize(n);
    for (size_t t = 0; t < n; ++t)
      positions_[t] = length + static_cast<int32_t>(done + t);
    bonsai_sequence_step s{};
    s.struct_size = sizeof s;
    s.slot = slot;
    s.n_tokens = static_cast<int32_t>(n);
    s.token_ids = tokens.data() + done;
    s.positions = positions_.data();
    bonsai_batch_step_desc batch{};
    batch.struct_size = sizeof batch;
    batch.n_sequences = 1;
    batch.sequences = &s;
    context.check(ext_.begin_batch(context.get(), &batch), "begin_batch");
    for (int32_t layer = 0; layer < n_layer; ++layer)
      context.check(context.api().encode_layer(context.get(), layer),
                    fmt::format("encode_layer({})", layer));
    context.check(context.api().end_step(context.get()), "end_step");
    done += n;
  }
}

MtpTrack *SlotBatchRunner::mtp(int32_t id) {
  return static_cast<size_t>(id) < tracks_.size() ? tracks_[static_cast<size_t>(id)].get()
                                                  : nullptr;
}

void SlotBatchRunner::open(int32_t id) {
  if (slot_of_.size() <= static_cast<size_t>(id))
    slot_of_.resize(static_cast<size_t>(id) + 1, -1);
  if (hidden_states_ != nullptr) {
    if (tracks_.size() <= static_cast<size_t>(id))
      tracks_.resize(static_cast<size_t>(id) + 1);
    if (!tracks_[static_cast<size_t>(id)])
      tracks_[static_cast<size_t>(id)] =
          make_mtp_track(*session_->engine, *session_->context, mtp_handles_);
  }
  int32_t slot = -1;
  if (!idle_slots_.empty()) {
    slot = idle_slots_.back();
    idle_slots_.pop_back();
  } else {
    const PluginContext &context = *session_->context;
    context.check(ext_.slot_create(context.get(), &slot), "slot_create");
  }
  slot_of_[static_cast<size_t>(id)] = slot;
}

void SlotBatchRunner::close(int32_t id) {
  const int32_t slot = slot_of(id);
  truncate(id, 0);
  slot_of_[static_cast<size_t>(id)] = -1;
  idle_slots_.push_back(slot); // kept allocated: the next sequence reuses it
}

void SlotBatchRunner::truncate(int32_t id, int32_t n_keep) {
  if (MtpTrack *track = mtp(id))
    track->trunk_truncated(n_keep);
  if (checkpoints_) {
    checkpoints_->truncate(id, slot_of(id), n_keep);
    return;
  }
  const PluginContext &context = *session_->context;
  context.check(ext_.slot_truncate(context.get(), slot_of(id), n_keep),
                fmt::format("slot_truncate({})", n_keep));
}

void SlotBatchRunner::copy_prefix(int32_t from, int32_t to, std::span<const int32_t> from_tokens) {
  const PluginContext &context = *session_->context;
  const auto n = static_cast<int32_t>(from_tokens.size());
  context.check(ext_.slot_copy(context.get(), slot_of(from), slot_of(to), n),
                fmt::format("slot_copy({} positions)", n));
  if (checkpoints_)
    checkpoints_->copied_prefix(from, to, slot_of(to), from_tokens);
  if (MtpTrack *track = mtp(to))
    track->copy_prefix_of(*mtp(from), n);
}

void SlotBatchRunner::step(std::span<const BatchEntry> entries) {
  const PluginContext &context = *session_->context;
  const bonsai_backend_api &api = context.api();
  bonsai_context *ctx = context.get();
  const auto n_vocab = static_cast<size_t>(session_->engine->n_vocab());

  // Order: entries without logits, then those wanting logits with several
  // tokens, then single tokens wanting logits. The last group's rows are
  // contiguous, so one LM head call reads the head once for all of them
  // (an entry wanting a row per token gets its own call).
  std::vector<size_t> &order = order_;
  order.resize(entries.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  const auto group = [&entries](size_t i) {
    const BatchEntry &e = entries[i];
    return e.logits == nullptr ? 0 : (e.tokens.size() > 1 || e.all_rows) ? 1 : 2;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&group](size_t a, size_t b) { return group(a) < group(b); });

  size_t total = 0;
  for (const BatchEntry &e : entries)
    total += e.tokens.size();
  positions_.resize(total);
  steps_.assign(entries.size(), bonsai_sequence_step{});
  std::vector<int32_t> &first_row = first_row_; // by entry: its first token's row in the step
  first_row.resize(entries.size());
  size_t row = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const BatchEntry &e = entries[order[k]];
    bonsai_sequence_step &s = steps_[k];
    s.struct_size = sizeof s;
    s.slot = slot_of(e.sequence);
    s.n_tokens = static_cast<int32_t>(e.tokens.size());
    s.token_ids = e.tokens.data();
    for (size_t t = 0; t < e.tokens.size(); ++t)
      positions_[row + t] = e.first_pos + static_cast<int32_t>(t);
    s.positions = positions_.data() + row;
    first_row[order[k]] = static_cast<int32_t>(row);
    row += e.tokens.size();
  }
  // A sequence that verifies drafted tokens (a row per token) may be cut
  // back after the step: keep its state from before it.
  if (checkpoints_)
    for (const BatchEntry &e : entries)
      if (e.all_rows)
        checkpoints_->before_cut_back_step(e.sequence, slot_of(e.sequence));
  bonsai_batch_step_desc batch{};
  batch.struct_size = sizeof batch;
  batch.n_sequences = static_cast<int32_t>(steps_.size());
  batch.sequences = steps_.data();
  context.check(ext_.begin_batch(ctx, &batch), "begin_batch");
  const auto n_layer = static_cast<int32_t>(session_->engine->spec.hparams.n_layer);
  for (int32_t layer = 0; layer < n_layer; ++layer)
    context.check(api.encode_layer(ctx, layer), fmt::format("encode_layer({})", layer));

  const auto head = [&](int32_t first_token, int32_t n_outputs, float *logits) {
    bonsai_lm_head_desc desc{};
    desc.struct_size = sizeof desc;
    desc.first_token = first_token;
    desc.n_outputs = n_outputs;
    desc.logits = logits;
    context.check(api.lm_head(ctx, &desc), "lm_head");
  };
  int32_t single_first = -1, single_count = 0;
  for (size_t index : order) {
    const BatchEntry &e = entries[index];
    if (e.logits == nullptr)
      continue;
    const int32_t last = first_row[index] + static_cast<int32_t>(e.tokens.size()) - 1;
    if (e.all_rows) {
      head(first_row[index], static_cast<int32_t>(e.tokens.size()), e.logits);
      continue;
    }
    if (e.tokens.size() > 1) {
      head(last, 1, e.logits);
      continue;
    }
    if (single_first < 0)
      single_first = last;
    ++single_count;
  }
  if (single_count > 0) {
    head_rows_.resize(static_cast<size_t>(single_count) * n_vocab);
    head(single_first, single_count, head_rows_.data());
    for (const BatchEntry &e : entries)
      if (e.logits != nullptr && e.tokens.size() == 1 && !e.all_rows) {
        const size_t offset = static_cast<size_t>(first_row[&e - entries.data()] - single_first);
        std::memcpy(e.logits, head_rows_.data() + offset * n_vocab, n_vocab * sizeof(float));
      }
  }
  // Each sequence's hidden states for its MTP track, taken before the step
  // ends and handed over once it has.
  if (hidden_states_ != nullptr) {
    const auto n_embd = static_cast<size_t>(session_->engine->model.n_embd);
    hidden_rows_.resize(total * n_embd);
    bonsai_hidden_states_desc desc{};
    desc.struct_size = sizeof desc;
    desc.first_token = 0;
    desc.n_outputs = static_cast<int32_t>(total);
    desc.hidden = hidden_rows_.data();
    context.check(hidden_states_->hidden_states(ctx, &desc), "hidden_states");
  }
  context.check(api.end_step(ctx), "end_step");
  if (checkpoints_)
    for (const BatchEntry &e : entries)
      checkpoints_->advanced(e.sequence, slot_of(e.sequence), e.tokens, e.all_rows);
  if (hidden_states_ != nullptr) {
    const auto n_embd = static_cast<size_t>(session_->engine->model.n_embd);
    for (size_t i = 0; i < entries.size(); ++i)
      mtp(entries[i].sequence)
          ->trunk_ran(entries[i].first_pos, static_cast<int32_t>(entries[i].tokens.size()),
                      hidden_rows_.data() + static_cast<size_t>(first_row[i]) * n_embd);
  }
}

} // namespace bonsai::host
