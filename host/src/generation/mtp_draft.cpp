#include "generation/mtp_draft.hpp"

#include <chrono>

namespace bonsai::host {

MtpDraft::MtpDraft(MtpTrack &track, int32_t n_ctx, const GenerateRequest &request, bool best_only)
    : track_(track), n_ctx_(n_ctx), picker_(request, best_only) {}

void MtpDraft::propose(std::span<const int32_t> context, int32_t max, DraftProposal &out) {
  out.tokens.clear();
  out.q.clear();
  out.catch_up_ms = 0;
  const auto fed = static_cast<int32_t>(context.size()) - 1; // the fed token's position
  if (max <= 0 || fed < 0 || fed + max > n_ctx_)
    return;
  const auto start = std::chrono::steady_clock::now();
  int32_t made = 0;
  if (!track_.sync(context, true, logits_, hidden_, &made))
    return; // no hidden state before the fed token (it ran before the layer was attached)
  // A drafted step leaves the layer one or two entries to make: more is
  // context it missed (the prompt, plain steps), a one-off.
  if (made > 2)
    out.catch_up_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (int32_t i = 0; i < max; ++i) {
    if (!picker_.pick(logits_, out) || i + 1 == max)
      break; // the last proposal need not be chained
    track_.chain(out.tokens.back(), fed + 1 + i, logits_, hidden_);
  }
  track_.drop_chained();
}

} // namespace bonsai::host
