#pragma once
// The MTP draft (docs/speculative.md, "The MTP layer as a draft"): qwen35's
// own multi-token-prediction layer proposes the tokens after the one about
// to be fed, chained: the first from the trunk's last hidden state and that
// token, each next one from the layer's own output state and the proposal
// before it, as llama.cpp's MTP draft does. The layer's entries of the
// context itself stay in the session (MtpTrack); the chained ones are
// dropped after each proposal.
#include <span>
#include <vector>

#include "generation/draft_picker.hpp"
#include "model/mtp_track.hpp"

namespace bonsai::host {

class MtpDraft {
public:
  // Proposes from `track` (a session's or a batch sequence's), whose
  // context window holds n_ctx positions. `best_only` as DraftPicker's.
  MtpDraft(MtpTrack &track, int32_t n_ctx, const GenerateRequest &request, bool best_only);

  // Up to `max` proposals after `context` (the session's tokens and the
  // one about to be fed), fewer when the layer's best token falls below
  // p_min or the context window ends.
  void propose(std::span<const int32_t> context, int32_t max, DraftProposal &out);

private:
  MtpTrack &track_;
  int32_t n_ctx_;
  DraftPicker picker_;
  std::vector<float> logits_, hidden_;
};

} // namespace bonsai::host
