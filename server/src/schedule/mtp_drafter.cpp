#include "schedule/mtp_drafter.hpp"

namespace bonsai::server {

MtpDrafter::MtpDrafter(Batch &batch, std::vector<int32_t> sequence_of, float p_min)
    : batch_(batch), sequence_of_(std::move(sequence_of)), p_min_(p_min) {}

std::vector<std::vector<int32_t>> MtpDrafter::propose(std::span<const DraftAsk> asks) {
  std::vector<std::vector<int32_t>> out;
  out.reserve(asks.size());
  for (const DraftAsk &ask : asks)
    out.push_back(ask.context.empty()
                      ? std::vector<int32_t>{}
                      : batch_.draft_mtp(sequence_of_.at(static_cast<size_t>(ask.slot)),
                                         ask.context.back(), ask.max, p_min_));
  return out;
}

} // namespace bonsai::server
