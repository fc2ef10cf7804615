#pragma once
// The decode paths the tuner times for a width (tokens a step): the graph
// path and the persistent kernel's variants that apply to the model, the
// fixed choice first, so that a tuning its budget cuts short still has it.
#include <string>
#include <vector>

#include "decode_choice.hpp"

namespace bonsai::cuda {

// What applies to the bound model and the step being tuned.
struct CandidateSpace {
  bool persistent = false; // the persistent kernel runs the model at this width
  bool head = false;       // and its LM head in the launch applies
  bool stream = false;     // and its weights in 3 slots (persistent_stream=3) fit the step
  bool fused = false;      // and Q/K/V can be fused with attention (persistent_qkv=fused)
};

// The slots of the streaming candidate: two instructions ahead.
inline constexpr int kTunedStreamSlots = 3;

struct DecodeCandidate {
  std::string name; // choice_options(choice)
  DecodeChoice choice;
};

// Every candidate once: `fixed`, the graph path, then the persistent
// kernel as it is by default, with the LM head after the launch, with the
// next weights prefetched to L2, with balanced shares, with the weights
// streamed two instructions ahead (persistent_stream=3) where they fit, and
// with Q/K/V fused with attention (persistent_qkv=fused) where it applies.
std::vector<DecodeCandidate> decode_candidates(const CandidateSpace &space,
                                               const DecodeChoice &fixed);

} // namespace bonsai::cuda
