#include "tune_candidates.hpp"

#include <algorithm>

namespace bonsai::cuda {

std::vector<DecodeCandidate> decode_candidates(const CandidateSpace &space,
                                               const DecodeChoice &fixed) {
  std::vector<DecodeChoice> choices{fixed, DecodeChoice{}};
  if (space.persistent) {
    DecodeChoice base;
    base.persistent = true;
    base.variant.head = space.head;
    choices.push_back(base);
    if (space.head) {
      DecodeChoice head_off = base;
      head_off.variant.head = false;
      choices.push_back(head_off);
    }
    DecodeChoice prefetch = base;
    prefetch.variant.prefetch = true;
    choices.push_back(prefetch);
    DecodeChoice balanced = base;
    balanced.variant.balanced = true;
    choices.push_back(balanced);
    if (space.stream) {
      DecodeChoice stream = base;
      stream.variant.stream = kTunedStreamSlots;
      choices.push_back(stream);
    }
    if (space.fused) {
      DecodeChoice fused = base;
      fused.variant.fused = true;
      choices.push_back(fused);
    }
  }
  std::vector<DecodeCandidate> candidates;
  for (const DecodeChoice &choice : choices) {
    // The fixed choice may name what does not apply (a head that cannot be
    // in the launch runs after it: the same as head off).
    DecodeChoice c = choice;
    if (c.persistent && !space.persistent)
      continue;
    if (c.persistent && !space.head)
      c.variant.head = false;
    if (!c.persistent)
      c.variant = {};
    const bool seen = std::any_of(candidates.begin(), candidates.end(),
                                  [&](const DecodeCandidate &d) { return d.choice == c; });
    if (!seen)
      candidates.push_back({choice_options(c), c});
  }
  return candidates;
}

} // namespace bonsai::cuda
