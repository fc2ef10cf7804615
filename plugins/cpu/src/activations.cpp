#include "activations.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace bonsai::cpu {

int layout_position(QuantLayout layout, int e) {
  switch (layout) {
  case QuantLayout::Natural:
  case QuantLayout::Q1Mask512:
    break;
  case QuantLayout::Q1Lanes:
    return ((e % 16) / 4) * 32 + (e / 16) * 4 + e % 4;
  case QuantLayout::Q2Lanes:
  case QuantLayout::Q2Lanes512:
    return (e % 4) * 32 + e / 4;
  }
  return e;
}

int layout_sub_block(QuantLayout layout, int e) {
  if (layout == QuantLayout::Q1Mask512)
    return (e % 64) / 8;
  return e / kActSub;
}

bool layout_has_lane_meta(QuantLayout layout) {
  return layout == QuantLayout::Q1Mask512 || layout == QuantLayout::Q2Lanes512;
}

int layout_lane(QuantLayout layout, int e) {
  if (!layout_has_lane_meta(layout))
    return -1;
  return (layout_position(layout, e) % 64) / 4;
}

int meta_per_block(QuantLayout layout) {
  return layout_has_lane_meta(layout) ? kLaneMetaPerBlock : kSubsPerBlock;
}

QuantizedActs QuantizedActs::tokens_from(int t0) const {
  QuantizedActs v = *this;
  v.n_tokens = n_tokens - t0;
  v.q = q + static_cast<int64_t>(t0) * kActBlock;
  v.d = d + static_cast<int64_t>(t0) * d_per_block;
  if (dsum != nullptr)
    v.dsum = dsum + t0;
  return v;
}

namespace {

// Where every value of a block goes, grouped by sub-block.
struct LayoutTable {
  int members[kSubsPerBlock][kActSub] = {}; // value indices of each sub-block
  int position[kActBlock] = {};
  int lane[kActBlock] = {};
  bool lane_meta = false;
};

LayoutTable make_table(QuantLayout layout) {
  LayoutTable table;
  int filled[kSubsPerBlock] = {};
  for (int e = 0; e < kActBlock; ++e) {
    const int s = layout_sub_block(layout, e);
    table.members[s][filled[s]++] = e;
    table.position[e] = layout_position(layout, e);
    table.lane[e] = layout_lane(layout, e);
  }
  table.lane_meta = layout_has_lane_meta(layout);
  return table;
}

// Built once; read-only afterwards.
const LayoutTable &layout_table(QuantLayout layout) {
  static const std::array<LayoutTable, kQuantLayouts> tables = [] {
    std::array<LayoutTable, kQuantLayouts> all;
    for (int l = 0; l < kQuantLayouts; ++l)
      all[l] = make_table(static_cast<QuantLayout>(l));
    return all;
  }();
  return tables[static_cast<int>(layout)];
}

} // namespace

void quantize_act_row(const float *x, int64_t cols, QuantLayout layout, const QuantTarget &out) {
  const LayoutTable &table = layout_table(layout);
  const int meta = meta_per_block(layout);
  const int64_t n_blocks = cols / kActBlock;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float *xb = x + b * kActBlock;
    int8_t *qb = out.q + b * out.stride * kActBlock;
    float *d = out.d + b * out.stride * meta;
    float scales[kSubsPerBlock];
    int sub_sums[kSubsPerBlock];
    int lane_sums[kLaneCount] = {};
    for (int s = 0; s < kSubsPerBlock; ++s) {
      const int *members = table.members[s];
      float amax = 0.0f;
      for (int j = 0; j < kActSub; ++j)
        amax = std::max(amax, std::fabs(xb[members[j]])); // NaN never replaces amax
      const float scale = amax / 127.0f;
      const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
      int sum = 0;
      for (int j = 0; j < kActSub; ++j) {
        const int e = members[j];
        // NaN becomes 0 and anything else is clamped, so the cast is never UB.
        const float r = std::nearbyint(xb[e] * inv);
        const int8_t v =
            std::isnan(r) ? int8_t{0} : static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
        qb[table.position[e]] = v;
        sum += v;
        if (table.lane_meta)
          lane_sums[table.lane[e]] += v;
      }
      scales[s] = scale;
      sub_sums[s] = sum;
    }
    if (table.lane_meta) {
      // Every lane lies in one sub-block: the sub-block of its first value.
      for (int s = 0; s < kSubsPerBlock; ++s)
        for (int j = 0; j < kActSub; ++j)
          d[table.lane[table.members[s][j]]] = scales[s];
      for (int lane = 0; lane < kLaneCount; ++lane)
        d[kLaneCount + lane] = d[lane] * static_cast<float>(lane_sums[lane]);
      continue;
    }
    float block_sum = 0.0f;
    for (int s = 0; s < kSubsPerBlock; ++s) {
      d[s] = scales[s];
      block_sum += scales[s] * static_cast<float>(sub_sums[s]);
    }
    out.dsum[b * out.stride] = block_sum;
  }
}

void QuantBuffer::reserve(int64_t token_slots, int64_t cols, int meta_per_block) {
  const int64_t values = token_slots * cols;
  const int64_t meta = values / kActBlock * meta_per_block;
  if (values > capacity_values_) {
    q_ = std::make_unique_for_overwrite<int8_t[]>(static_cast<size_t>(values));
    dsum_ = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(values / kActBlock));
    capacity_values_ = values;
  }
  if (meta > capacity_meta_) {
    d_ = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(meta));
    capacity_meta_ = meta;
  }
}

} // namespace bonsai::cpu
