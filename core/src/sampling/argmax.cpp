#include <limits>
#include <string>

#include "bonsai/core/error.hpp"
#include "bonsai/core/sampling.hpp"

namespace bonsai {

int32_t argmax(std::span<const float> logits) {
  if (logits.empty())
    throw Error("argmax: the logits are empty");
  if (logits.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw Error("argmax: " + std::to_string(logits.size()) +
                " logits do not fit in an int32 token id");
  // Two simple passes (the first vectorizes): the maximum, then its first
  // index. `x > m ? x : m` never picks NaN.
  float max_value = -std::numeric_limits<float>::infinity();
  for (const float x : logits)
    max_value = x > max_value ? x : max_value;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] == max_value) // also finds the first -inf when nothing is larger
      return static_cast<int32_t>(i);
  throw Error("argmax: every one of the " + std::to_string(logits.size()) + " logits is NaN");
}

} // namespace bonsai
