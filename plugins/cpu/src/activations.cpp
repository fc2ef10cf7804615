#include "activations.hpp"

#include <algorithm>
#include <cmath>

namespace bonsai::cpu {

int layout_position(QuantLayout layout, int e) {
  switch (layout) {
  case QuantLayout::Natural:
    break;
  case QuantLayout::Q1Lanes:
    return ((e % 16) / 4) * 32 + (e / 16) * 4 + e % 4;
  case QuantLayout::Q2Lanes:
    return (e % 4) * 32 + e / 4;
  }
  return e;
}

QuantizedActs QuantizedActs::tokens_from(int t0) const {
  QuantizedActs v = *this;
  v.n_tokens = n_tokens - t0;
  v.q = q + static_cast<int64_t>(t0) * kActBlock;
  v.d = d + static_cast<int64_t>(t0) * kSubsPerBlock;
  v.dsum = dsum + t0;
  return v;
}

void quantize_act_row(const float *x, int64_t cols, QuantLayout layout, const QuantTarget &out) {
  int position[kActBlock];
  for (int e = 0; e < kActBlock; ++e)
    position[e] = layout_position(layout, e);
  const int64_t n_blocks = cols / kActBlock;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int8_t *qb = out.q + b * out.stride * kActBlock;
    float *d = out.d + b * out.stride * kSubsPerBlock;
    float block_sum = 0.0f;
    for (int s = 0; s < kSubsPerBlock; ++s) {
      const float *xs = x + b * kActBlock + s * kActSub;
      float amax = 0.0f;
      for (int j = 0; j < kActSub; ++j)
        amax = std::max(amax, std::fabs(xs[j])); // NaN never replaces amax
      const float scale = amax / 127.0f;
      const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
      int sum = 0;
      for (int j = 0; j < kActSub; ++j) {
        // NaN becomes 0 and anything else is clamped, so the cast is never UB.
        const float r = std::nearbyint(xs[j] * inv);
        const int8_t v =
            std::isnan(r) ? int8_t{0} : static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
        qb[position[s * kActSub + j]] = v;
        sum += v;
      }
      d[s] = scale;
      block_sum += scale * static_cast<float>(sum);
    }
    out.dsum[b * out.stride] = block_sum;
  }
}

void QuantBuffer::reserve(int64_t token_slots, int64_t cols) {
  const int64_t values = token_slots * cols;
  if (values <= capacity_values_)
    return;
  q_ = std::make_unique_for_overwrite<int8_t[]>(static_cast<size_t>(values));
  d_ = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(values / kActSub));
  dsum_ = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(values / kActBlock));
  capacity_values_ = values;
}

} // namespace bonsai::cpu
