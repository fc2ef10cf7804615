#include "tune_check.hpp"

#include <algorithm>
#include <cmath>

#include "plugin_error.hpp"

namespace bonsai::cuda {

std::string check_step_outputs(const StepOutputs &reference, const StepOutputs &candidate) {
  if (candidate.n_tokens != reference.n_tokens || candidate.n_vocab != reference.n_vocab ||
      candidate.logits.size() != reference.logits.size() ||
      candidate.argmax.size() != reference.argmax.size())
    return "its outputs are not the reference's shape";
  const size_t vocab = static_cast<size_t>(reference.n_vocab);
  for (int t = 0; t < reference.n_tokens; ++t) {
    const float *ref = reference.logits.data() + static_cast<size_t>(t) * vocab;
    const float *got = candidate.logits.data() + static_cast<size_t>(t) * vocab;
    double dot = 0, ref_norm = 0, got_norm = 0;
    size_t best = 0, ref_best = 0;
    float ref_min = ref[0];
    for (size_t i = 0; i < vocab; ++i) {
      if (!std::isfinite(got[i]))
        return strformat("token %d: logit %zu is not finite", t, i);
      dot += double{ref[i]} * got[i];
      ref_norm += double{ref[i]} * ref[i];
      got_norm += double{got[i]} * got[i];
      best = got[i] > got[best] ? i : best;
      ref_best = ref[i] > ref[ref_best] ? i : ref_best;
      ref_min = std::min(ref_min, ref[i]);
    }
    const double cosine = dot / std::sqrt(ref_norm * got_norm);
    if (!(cosine >= kTuneMinCosine))
      return strformat("token %d: cosine %.6f to the reference's logits (at least %.3f)", t, cosine,
                       kTuneMinCosine);
    const int32_t id = candidate.argmax[static_cast<size_t>(t)];
    if (id != static_cast<int32_t>(best))
      return strformat("token %d: its argmax says %d, its logits %zu", t, id, best);
    const double range = double{ref[ref_best]} - ref_min;
    if (double{ref[ref_best]} - ref[best] > 0.01 * range)
      return strformat("token %d: it picks %zu, the reference %zu (not a near tie)", t, best,
                       ref_best);
  }
  return {};
}

} // namespace bonsai::cuda
