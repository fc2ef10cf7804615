#pragma once
// How a draft that computes its own logits (a draft model, the MTP layer)
// turns them into a proposal: its most likely token when the request is
// greedy (or a reply format wants sure proposals), else a draw from its own
// distribution q with its own random stream, which the acceptance rule
// needs; and no proposal once its best token's probability falls below
// DraftOptions::p_min.
#include <span>
#include <vector>

#include "bonsai/core/sampling.hpp"
#include "bonsai/engine.hpp"

namespace bonsai::host {

struct DraftProposal {
  std::vector<int32_t> tokens;
  std::vector<std::vector<TokenProb>> q; // per token, when sampling (empty when greedy)
  // Milliseconds the draft spent reading context it had missed (the prompt,
  // or the tokens of plain steps), beyond the one or two tokens a drafted
  // step leaves it: a one-off cost, not one of each proposal.
  double catch_up_ms = 0;
};

class DraftPicker {
public:
  // `best_only`: propose the most likely tokens even when the request
  // samples (for a reply format, whose proposals are kept where they equal
  // the format's own draw: a sure proposal is then the rule itself).
  DraftPicker(const GenerateRequest &request, bool best_only);

  // Appends the proposal these logits make to `out` (with its q when
  // sampling); false, and nothing appended, below p_min.
  bool pick(std::span<const float> logits, DraftProposal &out);

private:
  float p_min_;
  bool greedy_;
  Sampler sampler_;
};

} // namespace bonsai::host
