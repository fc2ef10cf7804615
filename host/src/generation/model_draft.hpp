#pragma once
// A draft model for speculative decoding: a second session (a smaller model
// of the same vocabulary) brought to the target's context, then asked for
// the next tokens one step at a time, with the distribution each was drawn
// from (q, for the acceptance rule).
#include <span>
#include <vector>

#include "generation/draft_picker.hpp"
#include "model/session_impl.hpp"

namespace bonsai::host {

class ModelDraft {
public:
  // `draft` is the draft model's session; its cache is taken over. Throws
  // InvalidArgument when its vocabulary differs from the target's. With
  // `best_only` it proposes its most likely tokens even when the request
  // samples (for a reply format, whose proposals are kept where they equal
  // the format's own draw: a sure proposal is then the rule itself).
  ModelDraft(Session::Impl &draft, const GenerateRequest &request, int32_t target_vocab,
             bool best_only);

  // Brings the draft's cache to `context` (reusing the common prefix) and
  // proposes up to `max` tokens, fewer when the draft's own top probability
  // falls below DraftOptions::p_min. False when cancelled. The first call
  // reads the whole context; later, a draft that has fallen far behind
  // (after plain steps) restarts from the context's last tokens instead of
  // reading all it missed: any proposal is checked anyway, and catching up
  // would cost as much as the draft could save.
  bool propose(std::span<const int32_t> context, int32_t max, DraftProposal &out);

private:
  Session::Impl &draft_;
  size_t offset_ = 0;   // the draft's cache holds context[offset_ ...]
  bool synced_ = false; // the first call reads the whole context (the prompt)
  DraftPicker picker_;
};

} // namespace bonsai::host
