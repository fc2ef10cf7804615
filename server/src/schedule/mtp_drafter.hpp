#pragma once
// The model's own MTP layer as the scheduler's draft (qwen35,
// docs/speculative.md): each slot's sequence of the scheduler's Batch keeps
// its entries of the layer (BatchOptions::mtp), and a proposal chains the
// layer's most likely tokens after the slot's next one.
#include <vector>

#include "schedule/draft_model.hpp"

namespace bonsai::server {

class MtpDrafter final : public Drafter {
public:
  // `batch` (made with BatchOptions::mtp) outlives this; `sequence_of` maps
  // each slot to its sequence of the batch.
  MtpDrafter(Batch &batch, std::vector<int32_t> sequence_of, float p_min);

  std::vector<std::vector<int32_t>> propose(std::span<const DraftAsk> asks) override;
  // The layer's entries follow the sequence's tokens: nothing to do.
  void keep(int32_t /*slot*/, int32_t /*n*/) override {}

private:
  Batch &batch_;
  std::vector<int32_t> sequence_of_;
  float p_min_;
};

} // namespace bonsai::server
