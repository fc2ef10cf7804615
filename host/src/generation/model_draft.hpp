#pragma once
// A draft model for speculative decoding: a second session (a smaller model
// of the same vocabulary) brought to the target's context, then asked for
// the next tokens one step at a time, with the distribution each was drawn
// from (q, for the acceptance rule).
#include <optional>
#include <span>
#include <vector>

#include "bonsai/core/sampling.hpp"
#include "model/session_impl.hpp"

namespace bonsai::host {

struct DraftProposal {
  std::vector<int32_t> tokens;
  std::vector<std::vector<TokenProb>> q; // per token, when sampling (empty when greedy)
  // Milliseconds the draft spent reading context it had missed (the prompt,
  // or the tokens of plain steps), beyond the one or two tokens a drafted
  // step leaves it: a one-off cost, not one of each proposal.
  double catch_up_ms = 0;
};

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
  float p_min_;
  bool greedy_;
  Sampler sampler_; // the draft's own draws (temperature > 0)
};

} // namespace bonsai::host
