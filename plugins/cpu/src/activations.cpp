#include "activations.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace bonsai::cpu {

int layout_position(QuantLayout layout, int e) {
  switch (layout) {
  case QuantLayout::Natural:
  case QuantLayout::Q1Mask512:
  case QuantLayout::Q1Tables: // quantized as Natural before the tables are built
  case QuantLayout::Q1TablesAndValues:
    break;
  case QuantLayout::Q1Lanes:
    return (e % 8 / 2) * 32 + e / 8 + (e % 2) * 16;
  case QuantLayout::Q2Lanes:
  case QuantLayout::Q2Lanes512:
    return (e % 4) * 32 + e / 4;
  }
  return e;
}

bool layout_has_lane_meta(QuantLayout layout) {
  return layout == QuantLayout::Q1Mask512 || layout == QuantLayout::Q2Lanes512;
}

int layout_lane(QuantLayout layout, int e) {
  if (!layout_has_lane_meta(layout))
    return -1;
  return (layout_position(layout, e) % 64) / 4;
}

int layout_scale_group(QuantLayout layout, int e) {
  if (layout == QuantLayout::Q1Lanes)
    return (layout_position(layout, e) % 32) / 4;
  return layout_has_lane_meta(layout) ? layout_lane(layout, e) : e / kActSub;
}

int layout_scale_groups(QuantLayout layout) {
  return layout_has_lane_meta(layout) ? kLaneCount : kSubsPerBlock;
}

int meta_per_block(QuantLayout layout) {
  return layout_has_lane_meta(layout) ? kLaneMetaPerBlock : kSubsPerBlock;
}

QuantizedActs QuantizedActs::tokens_from(int t0) const {
  QuantizedActs v = *this;
  v.n_tokens = n_tokens - t0;
  v.q = q + static_cast<int64_t>(t0) * block_bytes;
  v.d = d + static_cast<int64_t>(t0) * d_per_block;
  if (dsum != nullptr)
    v.dsum = dsum + t0;
  return v;
}

namespace {

// Where every value of a block goes, grouped by scale group.
struct LayoutTable {
  int n_groups = 0;
  int group_size = 0;
  int members[kLaneCount][kActSub] = {}; // value indices of each group
  int position[kActBlock] = {};
  bool lane_meta = false;
};

LayoutTable make_table(QuantLayout layout) {
  LayoutTable table;
  table.n_groups = layout_scale_groups(layout);
  table.group_size = kActBlock / table.n_groups;
  int filled[kLaneCount] = {};
  for (int e = 0; e < kActBlock; ++e) {
    const int g = layout_scale_group(layout, e);
    table.members[g][filled[g]++] = e;
    table.position[e] = layout_position(layout, e);
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

void build_q1_tables(const int8_t *values, int8_t *tables) {
  for (int n = 0; n < kActBlock / 4; ++n) {
    uint8_t *table = reinterpret_cast<uint8_t *>(tables) + n * kQ1TableBytes;
    for (int v = 0; v < 16; ++v) {
      int sum = 0;
      for (int j = 0; j < 4; ++j)
        sum += ((v >> j) & 1) ? values[4 * n + j] : -values[4 * n + j];
      const uint16_t bits = static_cast<uint16_t>(static_cast<int16_t>(sum));
      table[v] = static_cast<uint8_t>(bits & 0xff);
      table[16 + v] = static_cast<uint8_t>(bits >> 8);
    }
  }
}

void quantize_act_row(const float *x, int64_t cols, QuantLayout layout, const QuantTarget &out) {
  if (layout_has_tables(layout)) {
    // Natural bytes of one block at a time, then its tables in place (and
    // the bytes after them).
    int8_t values[kActBlock];
    QuantTarget block = out;
    block.q = values;
    for (int64_t b = 0; b < cols / kActBlock; ++b) {
      block.d = out.d + b * out.stride * kSubsPerBlock;
      block.dsum = out.dsum + b * out.stride;
      quantize_act_row(x + b * kActBlock, kActBlock, QuantLayout::Natural, block);
      int8_t *q = out.q + b * out.stride * q_block_bytes(layout);
      build_q1_tables(values, q);
      if (layout == QuantLayout::Q1TablesAndValues)
        std::memcpy(q + kQ1TableBlockBytes, values, kActBlock);
    }
    return;
  }
  const LayoutTable &table = layout_table(layout);
  const int meta = meta_per_block(layout);
  const int64_t n_blocks = cols / kActBlock;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float *xb = x + b * kActBlock;
    int8_t *qb = out.q + b * out.stride * kActBlock;
    float *d = out.d + b * out.stride * meta;
    float block_sum = 0.0f;
    for (int g = 0; g < table.n_groups; ++g) {
      const int *members = table.members[g];
      float amax = 0.0f;
      for (int j = 0; j < table.group_size; ++j)
        amax = std::max(amax, std::fabs(xb[members[j]])); // NaN never replaces amax
      const float scale = amax / 127.0f;
      const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
      int sum = 0;
      for (int j = 0; j < table.group_size; ++j) {
        const int e = members[j];
        // NaN becomes 0 and anything else is clamped, so the cast is never UB.
        const float r = std::nearbyint(xb[e] * inv);
        const int8_t v =
            std::isnan(r) ? int8_t{0} : static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
        qb[table.position[e]] = v;
        sum += v;
      }
      d[g] = scale;
      if (table.lane_meta)
        d[kLaneCount + g] = scale * static_cast<float>(sum); // group g is lane g
      else
        block_sum += scale * static_cast<float>(sum);
    }
    if (!table.lane_meta)
      out.dsum[b * out.stride] = block_sum;
  }
}

void QuantBuffer::reserve(int64_t token_slots, int64_t cols, int64_t block_bytes,
                          int meta_per_block) {
  const int64_t blocks = token_slots * (cols / kActBlock);
  const int64_t bytes = blocks * block_bytes;
  const int64_t meta = blocks * meta_per_block;
  if (bytes > capacity_values_) {
    q_ = std::make_unique_for_overwrite<int8_t[]>(static_cast<size_t>(bytes));
    capacity_values_ = bytes;
  }
  if (blocks > capacity_blocks_) {
    dsum_ = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(blocks));
    capacity_blocks_ = blocks;
  }
  if (meta > capacity_meta_) {
    d_ = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(meta));
    capacity_meta_ = meta;
  }
}

} // namespace bonsai::cpu
