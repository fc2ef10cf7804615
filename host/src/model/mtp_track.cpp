#include "model/mtp_track.hpp"

#include <algorithm>

namespace bonsai::host {

MtpTrack::MtpTrack(std::unique_ptr<MtpLayer> layer)
    : layer_(std::move(layer)), n_embd_(layer_->n_embd()),
      zeros_(static_cast<size_t>(layer_->n_embd()), 0.0f) {}

int32_t MtpTrack::rows_end() const {
  return rows_first_ + static_cast<int32_t>(rows_.size() / static_cast<size_t>(n_embd_));
}

int32_t MtpTrack::unread() const {
  const int32_t next = layer_->size() > 0 ? layer_->position(layer_->size() - 1) + 1 : 0;
  return std::max(0, rows_end() - std::max(next - 1, rows_first_));
}

void MtpTrack::trunk_ran(int32_t first, int32_t n, const float *hidden) {
  if (first != rows_end()) { // positions the track never saw: start over from here
    rows_.clear();
    rows_first_ = first;
  }
  rows_.insert(rows_.end(), hidden, hidden + static_cast<size_t>(n) * n_embd_);
}

void MtpTrack::trunk_truncated(int32_t n) {
  if (n >= rows_end())
    return;
  if (n <= rows_first_) {
    rows_.clear();
    rows_first_ = n;
    return;
  }
  rows_.resize(static_cast<size_t>(n - rows_first_) * n_embd_);
}

void MtpTrack::copy_prefix_of(const MtpTrack &other, int32_t n) {
  int32_t entries = 0; // entry p holds t_p: within the prefix while p < n
  while (entries < other.layer_->size() - other.chained_ && other.layer_->position(entries) < n)
    ++entries;
  layer_->copy_prefix_of(*other.layer_, entries);
  chained_ = 0;
  seen_.assign(other.seen_.begin(),
               other.seen_.begin() + std::min<ptrdiff_t>(n, std::ssize(other.seen_)));
  rows_first_ = std::min(other.rows_first_, n);
  const int32_t rows = std::max(0, std::min(n, other.rows_end()) - rows_first_);
  rows_.assign(other.rows_.begin(), other.rows_.begin() + static_cast<ptrdiff_t>(rows) * n_embd_);
}

bool MtpTrack::has_hidden_for(int32_t position) const {
  return position == 0 || (position - 1 >= rows_first_ && position - 1 < rows_end());
}

const float *MtpTrack::hidden_for(int32_t position) const {
  return position == 0 ? zeros_.data()
                       : rows_.data() + static_cast<size_t>(position - 1 - rows_first_) * n_embd_;
}

void MtpTrack::forget_rows_before(int32_t position) {
  if (position <= rows_first_)
    return;
  const int32_t drop = std::min(position, rows_end()) - rows_first_;
  rows_.erase(rows_.begin(), rows_.begin() + static_cast<ptrdiff_t>(drop) * n_embd_);
  rows_first_ += drop;
}

bool MtpTrack::sync(std::span<const int32_t> context, bool want_last, std::vector<float> &logits,
                    std::vector<float> &hidden, int32_t *made) {
  drop_chained();
  if (made != nullptr)
    *made = 0;
  // An entry stays while every token up to its own is unchanged.
  const auto common = static_cast<int32_t>(
      std::mismatch(seen_.begin(), seen_.end(), context.begin(), context.end()).first -
      seen_.begin());
  const auto last = static_cast<int32_t>(context.size()) - 1;
  int32_t keep = layer_->size();
  while (keep > 0 && layer_->position(keep - 1) >= common)
    --keep;
  if (want_last && keep > 0 && layer_->position(keep - 1) == last)
    --keep; // made before: made again for its logits
  layer_->truncate(keep);
  seen_.resize(static_cast<size_t>(common));

  int32_t next = keep > 0 ? layer_->position(keep - 1) + 1 : 0;
  // Positions whose hidden state is gone (a cache cut back past what was
  // read, or run before the track existed) get no entry.
  while (next <= last && !has_hidden_for(next))
    ++next;
  if (next <= last && last - next + 1 > layer_->capacity() - layer_->size())
    next = last + 1 - (layer_->capacity() - layer_->size()); // keep the latest that fit
  bool last_made = keep > 0 && layer_->position(keep - 1) == last;
  std::vector<float> h; // the entries' h, contiguous
  while (next <= last) {
    // A run of consecutive positions with hidden states, at most n_batch.
    int32_t end = next;
    while (end <= last && end - next < layer_->n_batch() && has_hidden_for(end))
      ++end;
    const int32_t n = end - next;
    tokens_.assign(context.begin() + next, context.begin() + end);
    positions_.resize(static_cast<size_t>(n));
    h.resize(static_cast<size_t>(n) * n_embd_);
    for (int32_t i = 0; i < n; ++i) {
      positions_[static_cast<size_t>(i)] = next + i;
      std::copy_n(hidden_for(next + i), n_embd_, h.data() + static_cast<size_t>(i) * n_embd_);
    }
    MtpEntries entries;
    entries.tokens = tokens_;
    entries.positions = positions_;
    entries.hidden = h.data();
    if (end - 1 == last && want_last) {
      logits.resize(static_cast<size_t>(layer_->n_vocab()));
      hidden.resize(static_cast<size_t>(n_embd_));
      entries.n_logits = 1;
      entries.out_hidden = hidden.data();
      entries.logits = logits.data();
    }
    layer_->run(entries);
    if (made != nullptr)
      *made += n;
    last_made = end - 1 == last;
    next = end;
    while (next <= last && !has_hidden_for(next))
      ++next;
  }
  seen_.assign(context.begin(), context.end());
  // Keep the hidden state of the last entry's h: a changed token at its
  // position makes that entry again.
  if (layer_->size() > 0)
    forget_rows_before(layer_->position(layer_->size() - 1) - 1);
  return last_made;
}

void MtpTrack::chain(int32_t token, int32_t position, std::vector<float> &logits,
                     std::vector<float> &hidden) {
  const int32_t one_token[1] = {token};
  const int32_t one_position[1] = {position};
  const std::vector<float> h = hidden;
  MtpEntries entries;
  entries.tokens = one_token;
  entries.positions = one_position;
  entries.hidden = h.data();
  entries.n_logits = 1;
  entries.out_hidden = hidden.data();
  entries.logits = logits.data();
  layer_->run(entries);
  ++chained_;
}

void MtpTrack::drop_chained() {
  layer_->truncate(layer_->size() - chained_);
  chained_ = 0;
}

} // namespace bonsai::host
