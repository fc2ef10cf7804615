#include "generation/model_draft.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace bonsai::host {
namespace {

// Most tokens a draft catches up on; further behind, it restarts from this
// many of the context's last tokens.
constexpr size_t kCatchUp = 16;

} // namespace

ModelDraft::ModelDraft(Session::Impl &draft, const GenerateRequest &request, int32_t target_vocab,
                       bool best_only)
    : draft_(draft), picker_(request, best_only) {
  if (draft.engine->n_vocab() != target_vocab)
    throw InvalidArgument(fmt::format("generate: the draft model has {} vocabulary rows and the "
                                      "model {}; a draft must share the vocabulary",
                                      draft.engine->n_vocab(), target_vocab));
}

bool ModelDraft::propose(std::span<const int32_t> context, int32_t max, DraftProposal &out) {
  out.tokens.clear();
  out.q.clear();
  out.catch_up_ms = 0;
  if (max <= 0 || static_cast<int64_t>(context.size()) + max > draft_.n_ctx())
    return true;
  // Keep what the draft's cache shares with the context; evaluate the rest.
  if (offset_ > context.size())
    offset_ = 0;
  std::span<const int32_t> own = context.subspan(offset_);
  const auto mismatch =
      std::mismatch(draft_.history.begin(), draft_.history.end(), own.begin(), own.end());
  auto keep = std::min<size_t>(static_cast<size_t>(mismatch.first - draft_.history.begin()),
                               own.size() - 1);
  if (synced_ && own.size() - keep > kCatchUp) {
    offset_ = context.size() - kCatchUp;
    own = context.subspan(offset_);
    keep = 0;
  }
  synced_ = true;
  draft_.truncate_to(static_cast<int32_t>(keep));
  std::vector<float> logits;
  const std::span<const int32_t> missed = own.subspan(keep);
  const auto read_start = std::chrono::steady_clock::now();
  if (!draft_.run_tokens(missed, Session::Impl::Want::last_logits, &logits, nullptr))
    return false;
  // After a drafted step the draft has missed the target's own token and
  // perhaps its last proposal (never evaluated): its steady cost.
  if (missed.size() > 2)
    out.catch_up_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - read_start)
            .count();
  for (int32_t i = 0; i < max; ++i) {
    if (!picker_.pick(logits, out))
      break;
    if (i + 1 == max)
      break; // the last proposal need not be evaluated
    const int32_t one[1] = {out.tokens.back()};
    if (!draft_.run_tokens(one, Session::Impl::Want::last_logits, &logits, nullptr))
      return false;
  }
  return true;
}

} // namespace bonsai::host
