#pragma once
// The tuner's quick check of a candidate: its logits and greedy ids for the
// step it ran against those of the reference path (the layers launch by
// launch, the LM head after them) on the same inputs. It is there to keep a
// broken path (a lost handoff, a wrong kernel) from being chosen, not to
// grade numerics: the fast paths' own tolerances are the golden gates'.
#include <cstdint>
#include <string>
#include <vector>

namespace bonsai::cuda {

// Every token's logits ([token][vocab]) and argmax ids of one run of a step.
struct StepOutputs {
  int n_tokens = 0, n_vocab = 0;
  std::vector<float> logits;
  std::vector<int32_t> argmax;
};

// The least cosine of a token's logits to the reference's; the int8 paths
// agree to about 0.9999 on random models, a broken one falls to 0.
inline constexpr double kTuneMinCosine = 0.999;

// "" when `candidate` passes: each token's logits finite and at cosine >=
// kTuneMinCosine to the reference's, its argmax id that of its own logits
// (ties to the lower row), and that row's reference logit within 1 % of the
// reference's logit range of the reference's best (a near tie may flip).
// Else why not, naming the token.
std::string check_step_outputs(const StepOutputs &reference, const StepOutputs &candidate);

} // namespace bonsai::cuda
