#include "generation/session_batch_runner.hpp"

#include <algorithm>

namespace bonsai::host {

SessionBatchRunner::SessionBatchRunner(std::unique_ptr<Session::Impl> first, ProgressFn on_progress,
                                       bool mtp)
    : engine_(first->engine), on_progress_(std::move(on_progress)), mtp_(mtp) {
  if (mtp_)
    first->attach_mtp("create_batch");
  sessions_.push_back(std::move(first));
}

void SessionBatchRunner::open(int32_t id) {
  if (sessions_.size() <= static_cast<size_t>(id))
    sessions_.resize(static_cast<size_t>(id) + 1);
  std::unique_ptr<Session::Impl> &slot = sessions_[static_cast<size_t>(id)];
  if (!slot) {
    slot = open_session(engine_, on_progress_);
    if (mtp_)
      slot->attach_mtp("create_batch");
  }
}

void SessionBatchRunner::close(int32_t id) {
  session(id).truncate_to(0); // the session stays, for the next sequence with this id
}

void SessionBatchRunner::truncate(int32_t id, int32_t n_keep) {
  session(id).truncate_to(n_keep);
}

void SessionBatchRunner::copy_prefix(int32_t /*from*/, int32_t to,
                                     std::span<const int32_t> from_tokens) {
  Session::Impl &target = session(to);
  target.truncate_to(0);
  if (!from_tokens.empty())
    target.run_tokens(from_tokens, Session::Impl::Want::nothing, nullptr, nullptr);
}

void SessionBatchRunner::step(std::span<const BatchEntry> entries) {
  size_t done = 0;
  try {
    for (; done < entries.size(); ++done) {
      const BatchEntry &e = entries[done];
      Session::Impl &s = session(e.sequence);
      if (e.logits == nullptr) {
        s.run_tokens(e.tokens, Session::Impl::Want::nothing, nullptr, nullptr);
        continue;
      }
      s.run_tokens(e.tokens,
                   e.all_rows ? Session::Impl::Want::all_logits : Session::Impl::Want::last_logits,
                   &logits_, nullptr);
      std::copy(logits_.begin(), logits_.end(), e.logits);
    }
  } catch (...) {
    // A step changes every sequence or none: undo the ones already run.
    for (size_t i = 0; i <= done && i < entries.size(); ++i)
      session(entries[i].sequence).truncate_to(entries[i].first_pos);
    throw;
  }
}

} // namespace bonsai::host
