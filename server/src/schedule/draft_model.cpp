#include "schedule/draft_model.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace bonsai::server {

DraftModel::DraftModel(const Engine &draft, int32_t slots, int32_t n_vocab, float p_min)
    : batch_(draft.create_batch({.max_sequences = slots, .on_progress = [](double) {}})),
      p_min_(p_min) {
  if (draft.n_vocab() != n_vocab)
    throw InvalidArgument(fmt::format("the draft model has {} tokens in its vocabulary, the model "
                                      "{}: a draft must share the model's vocabulary",
                                      draft.n_vocab(), n_vocab));
  for (int32_t slot = 0; slot < slots; ++slot)
    sequence_of_.push_back(batch_.add_sequence());
}

bool DraftModel::confident(std::span<const float> logits, int32_t &token) const {
  token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  if (p_min_ <= 0.0f) // every token is confident enough: no softmax over the vocabulary
    return true;
  // p(argmax) = 1 / sum exp(l - l_max).
  const float top = logits[static_cast<size_t>(token)];
  double sum = 0;
  for (const float l : logits)
    sum += std::exp(static_cast<double>(l - top));
  return 1.0 / sum >= static_cast<double>(p_min_);
}

void DraftModel::keep(int32_t slot, int32_t n) {
  const int32_t sequence = sequence_of_.at(static_cast<size_t>(slot));
  batch_.truncate(sequence, std::min(n, batch_.position(sequence)));
}

std::vector<std::vector<int32_t>> DraftModel::propose(std::span<const DraftAsk> asks) {
  std::vector<std::vector<int32_t>> out(asks.size());
  // Per ask: the tokens its draft sequence still has to read, and whether
  // it is still proposing.
  std::vector<std::span<const int32_t>> unread(asks.size());
  std::vector<bool> active(asks.size(), false);
  std::vector<int32_t> most(asks.size(), 0); // ask.max within the draft's context
  for (size_t i = 0; i < asks.size(); ++i) {
    const DraftAsk &ask = asks[i];
    const int32_t sequence = sequence_of_.at(static_cast<size_t>(ask.slot));
    const auto n = static_cast<int32_t>(ask.context.size());
    most[i] = std::min(ask.max, batch_.n_ctx() - n);
    if (n == 0 || most[i] <= 0)
      continue;
    const std::vector<int32_t> &cached = batch_.tokens(sequence);
    const auto common = static_cast<int32_t>(
        std::mismatch(cached.begin(), cached.end(), ask.context.begin(), ask.context.end()).first -
        cached.begin());
    // The last token is read again even when cached: its logits start the draft.
    const int32_t keep = std::min(common, n - 1);
    batch_.truncate(sequence, keep);
    unread[i] = ask.context.subspan(static_cast<size_t>(keep));
    active[i] = true;
  }

  // Read what each sequence lacks, in steps of at most n_batch tokens; an
  // ask whose last token is read gets its first proposal from that row.
  std::vector<SequenceInput> inputs;
  std::vector<size_t> owner;
  for (;;) {
    inputs.clear();
    owner.clear();
    int32_t budget = batch_.n_batch();
    for (size_t i = 0; i < asks.size() && budget > 0; ++i) {
      if (!active[i] || unread[i].empty())
        continue;
      const auto take = std::min(static_cast<int32_t>(unread[i].size()), budget);
      const bool last = take == static_cast<int32_t>(unread[i].size());
      inputs.push_back({sequence_of_[static_cast<size_t>(asks[i].slot)],
                        unread[i].first(static_cast<size_t>(take)), last});
      owner.push_back(i);
      budget -= take;
    }
    if (inputs.empty())
      break;
    const BatchLogits logits = batch_.step(inputs);
    int32_t row = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const size_t i = owner[k];
      unread[i] = unread[i].subspan(inputs[k].tokens.size());
      if (!inputs[k].logits)
        continue;
      int32_t token = -1;
      if (confident(logits.row(row++), token))
        out[i].push_back(token);
      else
        active[i] = false;
    }
  }

  // Then one token per step for every ask still proposing.
  for (;;) {
    inputs.clear();
    owner.clear();
    for (size_t i = 0; i < asks.size(); ++i) {
      const auto made = static_cast<int32_t>(out[i].size());
      if (!active[i] || made == 0 || made >= most[i])
        continue;
      inputs.push_back({sequence_of_[static_cast<size_t>(asks[i].slot)],
                        std::span<const int32_t>(&out[i].back(), 1), true});
      owner.push_back(i);
    }
    if (inputs.empty())
      break;
    const BatchLogits logits = batch_.step(inputs);
    for (size_t k = 0; k < inputs.size(); ++k) {
      int32_t token = -1;
      if (confident(logits.row(static_cast<int32_t>(k)), token))
        out[owner[k]].push_back(token);
      else
        active[owner[k]] = false;
    }
  }
  return out;
}

} // namespace bonsai::server
