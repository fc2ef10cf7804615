#pragma once
// The fallback for plugins without the sequences extension: each sequence is
// a session of its own (own context and weights), stepped one after another.
#include <memory>
#include <vector>

#include "generation/batch_runner.hpp"
#include "model/session_impl.hpp"

namespace bonsai::host {

class SessionBatchRunner final : public BatchRunner {
public:
  // `first` becomes sequence 0's session; the others are opened on demand.
  // With `mtp` each session drafts with its MTP layer (Session::Impl::
  // attach_mtp; throws as it does).
  SessionBatchRunner(std::unique_ptr<Session::Impl> first, ProgressFn on_progress,
                     bool mtp = false);

  void open(int32_t id) override;
  void close(int32_t id) override;
  void truncate(int32_t id, int32_t n_keep) override;
  void copy_prefix(int32_t from, int32_t to, std::span<const int32_t> from_tokens) override;
  void step(std::span<const BatchEntry> entries) override;
  bool steps_together() const override { return false; }
  int32_t length(int32_t id) const override {
    return sessions_.at(static_cast<size_t>(id))->runner->kv_length();
  }
  MtpTrack *mtp(int32_t id) override { return session(id).mtp.get(); }

private:
  Session::Impl &session(int32_t id) { return *sessions_.at(static_cast<size_t>(id)); }

  std::shared_ptr<const Engine::Impl> engine_;
  ProgressFn on_progress_;
  bool mtp_ = false;
  std::vector<std::unique_ptr<Session::Impl>> sessions_; // by id; kept when closed, for reuse
  std::vector<float> logits_;
};

} // namespace bonsai::host
