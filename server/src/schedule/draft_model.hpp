#pragma once
// A draft model for the scheduler's slots: one sequence per slot in a Batch
// of a smaller model with the same vocabulary. Before each proposal a
// slot's draft sequence is brought in line with the slot's tokens (its
// cache keeps the common prefix, the rest is read again), then every slot
// that asks drafts greedily, all of them in shared steps of the draft model.
#include <cstdint>
#include <span>
#include <vector>

#include "bonsai/batch.hpp"

namespace bonsai::server {

struct DraftAsk {
  int32_t slot = 0;                 // [0, slots)
  std::span<const int32_t> context; // the slot's tokens and the one about to be fed
  int32_t max = 0;                  // most tokens to propose
};

// What proposes tokens for the scheduler's slots beyond prompt lookup: a
// draft model (DraftModel) or the model's own MTP layer (MtpDrafter).
class Drafter {
public:
  virtual ~Drafter() = default;
  // Proposals for each ask, in order (each at most ask.max tokens; fewer
  // where the draft is unsure or its context is full). Throws Error.
  virtual std::vector<std::vector<int32_t>> propose(std::span<const DraftAsk> asks) = 0;
  // A new job in `slot` that reuses the first n tokens of the slot's cache.
  virtual void keep(int32_t slot, int32_t n) = 0;
};

class DraftModel final : public Drafter {
public:
  // `p_min`: a slot stops proposing at the first token whose probability
  // under the draft is below it. Throws InvalidArgument when the draft's
  // vocabulary differs from `n_vocab` (the model's), PluginError.
  DraftModel(const Engine &draft, int32_t slots, int32_t n_vocab, float p_min);

  // Proposals for each ask, in order (each at most ask.max tokens; fewer
  // where the draft is unsure or its context is full). Throws Error from
  // the draft's steps.
  std::vector<std::vector<int32_t>> propose(std::span<const DraftAsk> asks) override;
  // A new job in `slot`: the draft keeps at most its first n tokens, so that
  // it reuses no more of a previous job than the model's cache does (the
  // prompt cache's tenant isolation holds for the draft too).
  void keep(int32_t slot, int32_t n) override;

private:
  // Argmax of a row and whether its probability reaches p_min.
  bool confident(std::span<const float> logits, int32_t &token) const;

  Batch batch_;
  std::vector<int32_t> sequence_of_; // by slot
  float p_min_;
};

} // namespace bonsai::server
