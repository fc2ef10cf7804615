#include "bonsai/batch.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/log_internal.hpp"
#include "generation/mtp_draft.hpp"
#include "generation/session_batch_runner.hpp"
#include "generation/slot_batch_runner.hpp"
#include "plugins/layer_kinds.hpp"

namespace bonsai {

struct Batch::Impl {
  std::shared_ptr<const Engine::Impl> engine;
  std::unique_ptr<host::BatchRunner> runner;
  int32_t max_sequences = 0;
  struct Sequence {
    bool open = false;
    std::vector<int32_t> history; // ids in its KV cache
  };
  std::vector<Sequence> sequences; // by id, max_sequences entries
  std::vector<host::BatchEntry> entries;
  bool mtp = false; // BatchOptions::mtp
  std::vector<float> mtp_logits, mtp_hidden;

  // The open sequence `id`; InvalidArgument naming `call` otherwise.
  Sequence &open_sequence(int32_t id, const char *call) {
    if (id < 0 || id >= max_sequences || !sequences[static_cast<size_t>(id)].open)
      throw InvalidArgument(fmt::format("{}: sequence {} is not open", call, id));
    return sequences[static_cast<size_t>(id)];
  }
};

Batch Engine::create_batch(const BatchOptions &options) const {
  if (options.max_sequences < 1)
    throw InvalidArgument(
        fmt::format("create_batch: max_sequences is {}; it must be >= 1", options.max_sequences));
  auto batch = std::make_unique<Batch::Impl>();
  batch->engine = impl_;
  batch->max_sequences = options.max_sequences;
  batch->sequences.resize(static_cast<size_t>(options.max_sequences));
  std::unique_ptr<Session::Impl> session = open_session(impl_, options.on_progress);
  // qwen35 sequences share one context when the plugin runs their layers
  // (ABI 1.2 layer kinds): the slot runner keeps their checkpoints.
  const bool hybrid = impl_->spec.arch() == Architecture::qwen35;
  const bonsai_sequences_extension *ext =
      session->plugin_layers ? host::usable_sequences_extension(session->context->api()) : nullptr;
  const bonsai_layer_kinds_extension *kinds =
      hybrid ? host::qwen35_layer_kinds(session->context->api()) : nullptr;
  if (ext != nullptr && ext->max_slots >= options.max_sequences) {
    batch->runner = std::make_unique<host::SlotBatchRunner>(std::move(session), *ext, kinds,
                                                            options.max_sequences, options.mtp);
  } else {
    const std::string why =
        hybrid && !session->plugin_layers
            ? std::string("runs no qwen35 layers itself (ABI 1.2 layer kinds)")
        : ext == nullptr
            ? std::string("offers no multi-sequence step (ABI 1.1 sequences extension)")
            : fmt::format("holds at most {} KV slots per context", ext->max_slots);
    host::logger().warn("plugin {} {}; the batch steps its sequences one after another, each "
                        "with its own context and weights",
                        impl_->plugin().info.name, why);
    batch->runner = std::make_unique<host::SessionBatchRunner>(std::move(session),
                                                               options.on_progress, options.mtp);
  }
  batch->mtp = options.mtp;
  return Batch(std::move(batch));
}

Batch::Batch(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Batch::Batch(Batch &&) noexcept = default;
Batch &Batch::operator=(Batch &&) noexcept = default;
Batch::~Batch() = default;

int32_t Batch::add_sequence() {
  auto &sequences = impl_->sequences;
  const auto free_id = std::find_if(sequences.begin(), sequences.end(),
                                    [](const Impl::Sequence &s) { return !s.open; });
  if (free_id == sequences.end())
    throw InvalidArgument(
        fmt::format("add_sequence: all {} sequences of the batch are open", impl_->max_sequences));
  const auto id = static_cast<int32_t>(free_id - sequences.begin());
  impl_->runner->open(id);
  free_id->open = true;
  free_id->history.clear();
  return id;
}

void Batch::remove_sequence(int32_t sequence) {
  Impl::Sequence &s = impl_->open_sequence(sequence, "remove_sequence");
  impl_->runner->close(sequence);
  s.open = false;
  s.history.clear();
}

void Batch::copy_prefix(int32_t from, int32_t to, int32_t n) {
  const Impl::Sequence &source = impl_->open_sequence(from, "copy_prefix");
  Impl::Sequence &target = impl_->open_sequence(to, "copy_prefix");
  if (from == to)
    throw InvalidArgument(fmt::format("copy_prefix: from and to are both sequence {}", from));
  if (n < 0 || n > static_cast<int32_t>(source.history.size()))
    throw InvalidArgument(fmt::format("copy_prefix: {} is outside [0, {}] (the position of "
                                      "sequence {})",
                                      n, source.history.size(), from));
  const std::span<const int32_t> prefix(source.history.data(), static_cast<size_t>(n));
  try {
    impl_->runner->copy_prefix(from, to, prefix);
  } catch (...) {
    // A copy that rebuilds state (qwen35) may stop part-way: the history
    // keeps what the cache holds.
    target.history.assign(prefix.begin(),
                          prefix.begin() + std::min<int32_t>(n, impl_->runner->length(to)));
    throw;
  }
  target.history.assign(prefix.begin(), prefix.end());
}

void Batch::truncate(int32_t sequence, int32_t n) {
  Impl::Sequence &s = impl_->open_sequence(sequence, "truncate");
  if (n < 0 || n > static_cast<int32_t>(s.history.size()))
    throw InvalidArgument(fmt::format("truncate: {} is outside [0, {}] (the position of "
                                      "sequence {})",
                                      n, s.history.size(), sequence));
  try {
    impl_->runner->truncate(sequence, n);
  } catch (...) {
    s.history.resize(
        std::min(s.history.size(), static_cast<size_t>(impl_->runner->length(sequence))));
    throw;
  }
  s.history.resize(static_cast<size_t>(n));
}

int32_t Batch::position(int32_t sequence) const {
  return static_cast<int32_t>(impl_->open_sequence(sequence, "position").history.size());
}

const std::vector<int32_t> &Batch::tokens(int32_t sequence) const {
  return impl_->open_sequence(sequence, "tokens").history;
}

BatchLogits Batch::step(std::span<const SequenceInput> inputs) {
  const Engine::Impl &engine = *impl_->engine;
  if (inputs.empty())
    throw InvalidArgument("step: no sequences given");
  std::vector<bool> seen(static_cast<size_t>(impl_->max_sequences), false);
  int64_t total = 0;
  BatchLogits out;
  out.n_vocab = engine.n_vocab();
  for (const SequenceInput &input : inputs) {
    const Impl::Sequence &s = impl_->open_sequence(input.sequence, "step");
    if (seen[static_cast<size_t>(input.sequence)])
      throw InvalidArgument(
          fmt::format("step: sequence {} appears twice in one step", input.sequence));
    seen[static_cast<size_t>(input.sequence)] = true;
    if (input.tokens.empty())
      throw InvalidArgument(fmt::format("step: sequence {} has no tokens", input.sequence));
    engine.check_tokens(input.tokens, "step");
    const auto position = static_cast<int64_t>(s.history.size());
    if (position + static_cast<int64_t>(input.tokens.size()) > n_ctx())
      throw ContextFullError(fmt::format("step: {} tokens at position {} of sequence {} do not "
                                         "fit the context window of {} tokens",
                                         input.tokens.size(), position, input.sequence, n_ctx()));
    total += static_cast<int64_t>(input.tokens.size());
    out.n_rows += !input.logits      ? 0
                  : input.all_logits ? static_cast<int32_t>(input.tokens.size())
                                     : 1;
  }
  if (total > n_batch())
    throw InvalidArgument(fmt::format(
        "step: {} tokens exceed n_batch ({}); split the prompts into chunks", total, n_batch()));

  out.values.resize(static_cast<size_t>(out.n_rows) * static_cast<size_t>(out.n_vocab));
  auto &entries = impl_->entries;
  entries.clear();
  int32_t row = 0;
  for (const SequenceInput &input : inputs) {
    host::BatchEntry e;
    e.sequence = input.sequence;
    e.tokens = input.tokens;
    e.first_pos = position(input.sequence);
    if (input.logits) {
      e.logits = out.values.data() + static_cast<size_t>(row) * out.n_vocab;
      e.all_rows = input.all_logits;
      row += input.all_logits ? static_cast<int32_t>(input.tokens.size()) : 1;
    }
    entries.push_back(e);
  }
  impl_->runner->step(entries);
  for (const SequenceInput &input : inputs) {
    std::vector<int32_t> &history = impl_->sequences[static_cast<size_t>(input.sequence)].history;
    history.insert(history.end(), input.tokens.begin(), input.tokens.end());
    // A long prompt: the MTP layer reads what it can now, so that the
    // hidden states held stay within a step's.
    host::MtpTrack *track = impl_->runner->mtp(input.sequence);
    if (track != nullptr && track->unread() > n_batch())
      track->sync(history, false, impl_->mtp_logits, impl_->mtp_hidden);
  }
  return out;
}

std::vector<int32_t> Batch::draft_mtp(int32_t sequence, int32_t next, int32_t max, float p_min) {
  const Impl::Sequence &s = impl_->open_sequence(sequence, "draft_mtp");
  if (!impl_->mtp)
    throw InvalidArgument("draft_mtp: the batch was made without BatchOptions::mtp");
  const int32_t one[1] = {next};
  impl_->engine->check_tokens(one, "draft_mtp");
  if (max < 0 || !(p_min >= 0.0f && p_min <= 1.0f))
    throw InvalidArgument(
        fmt::format("draft_mtp: max {} must be >= 0 and p_min {} in [0, 1]", max, p_min));
  GenerateRequest greedy;
  greedy.sampling.temperature = 0.0f;
  greedy.sampling.seed = 0;
  greedy.draft.p_min = p_min;
  host::MtpDraft draft(*impl_->runner->mtp(sequence), n_ctx(), greedy, true);
  std::vector<int32_t> context = s.history;
  context.push_back(next);
  host::DraftProposal proposal;
  draft.propose(context, max, proposal);
  return std::move(proposal.tokens);
}

int32_t Batch::max_sequences() const {
  return impl_->max_sequences;
}
int32_t Batch::n_ctx() const {
  return impl_->engine->options.n_ctx;
}
int32_t Batch::n_batch() const {
  return impl_->engine->options.n_batch;
}
bool Batch::steps_together() const {
  return impl_->runner->steps_together();
}

} // namespace bonsai
