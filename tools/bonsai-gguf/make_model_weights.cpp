#include "make_model_weights.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "bonsai/core/convert.hpp"
#include "bonsai/core/error.hpp"

namespace bonsai::tools {
namespace {

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

// The 81 bytes whose four 2-bit codes are all in {0, 1, 2}.
std::array<uint8_t, 81> ternary_bytes() {
  std::array<uint8_t, 81> table{};
  for (int i = 0; i < 81; ++i) {
    int rest = i;
    uint8_t byte = 0;
    for (int slot = 0; slot < 4; ++slot) {
      byte = static_cast<uint8_t>(byte | ((rest % 3) << (2 * slot)));
      rest /= 3;
    }
    table[static_cast<size_t>(i)] = byte;
  }
  return table;
}

uint16_t random_scale(FastRng &rng, float scale) {
  return f32_to_fp16(scale * (0.5f + rng.uniform()));
}

void fill_q1_blocks(FastRng &rng, float scale, std::span<uint8_t> out) {
  for (size_t at = 0; at < out.size(); at += sizeof(BlockQ1_0)) {
    BlockQ1_0 block;
    block.d = random_scale(rng, scale);
    const uint64_t bits[2] = {rng.next(), rng.next()};
    std::memcpy(block.signs, bits, sizeof block.signs);
    std::memcpy(out.data() + at, &block, sizeof block);
  }
}

void fill_q2_blocks(FastRng &rng, float scale, std::span<uint8_t> out) {
  static const std::array<uint8_t, 81> table = ternary_bytes();
  for (size_t at = 0; at < out.size(); at += sizeof(BlockQ2_0)) {
    BlockQ2_0 block;
    block.d = random_scale(rng, scale);
    for (size_t i = 0; i < sizeof block.codes; i += 4) {
      const uint64_t r = rng.next();
      // Each 16-bit slice picks one of 81 bytes (bias < 81/65536, irrelevant here).
      for (size_t k = 0; k < 4; ++k) {
        const uint64_t slice = (r >> (16 * k)) & 0xFFFF;
        block.codes[i + k] = table[static_cast<size_t>((slice * 81) >> 16)];
      }
    }
    std::memcpy(out.data() + at, &block, sizeof block);
  }
}

// The other ternary encodings: random Q2_0 rows whose blocks share a scale
// over the target's block (256 for TQ1_0/TQ2_0), converted exactly.
void fill_other_ternary(const RandomMatrixSpec &spec, FastRng &rng, float scale,
                        std::span<uint8_t> out) {
  const TypeTraits t = traits_of(spec.type);
  const size_t dst_row = row_bytes(spec.type, spec.in_features);
  if (dst_row == 0 || out.size() % dst_row != 0 || spec.in_features % t.block_elements != 0)
    throw Error("random weights: " + std::to_string(out.size()) +
                " bytes is not a whole number of " + std::string(t.name) + " rows of " +
                std::to_string(spec.in_features));
  std::vector<uint8_t> q2(row_bytes(GgmlType::Q2_0, spec.in_features));
  const size_t share = static_cast<size_t>(std::max<int64_t>(1, t.block_elements / kQ2BlockSize));
  for (size_t at = 0; at < out.size(); at += dst_row) {
    fill_q2_blocks(rng, scale, q2);
    for (size_t b = 0; b < q2.size() / sizeof(BlockQ2_0); b += share)
      for (size_t k = 1; k < share; ++k) // repeat the first block's scale
        std::memcpy(q2.data() + (b + k) * sizeof(BlockQ2_0), q2.data() + b * sizeof(BlockQ2_0), 2);
    convert_row(GgmlType::Q2_0, spec.type, q2.data(), out.data() + at, spec.in_features);
  }
}

} // namespace

FastRng::FastRng(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t &word : s_)
    word = splitmix64(state);
}

uint64_t FastRng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

float FastRng::uniform() {
  return static_cast<float>(next() >> 40) * 0x1.0p-24f;
}

uint64_t tensor_seed(uint64_t model_seed, std::string_view tensor_name) {
  // FNV-1a of the name, mixed with the model seed.
  uint64_t hash = 0xCBF29CE484222325ull;
  for (char c : tensor_name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001B3ull;
  }
  uint64_t state = model_seed ^ hash;
  return splitmix64(state);
}

void fill_random_matrix(const RandomMatrixSpec &spec, std::span<uint8_t> out) {
  if (spec.in_features <= 0)
    throw Error("random weights need a positive input width, got " +
                std::to_string(spec.in_features));
  FastRng rng(spec.seed);
  if (!(spec.gain >= 0.0f && spec.gain <= kMaxRandomGain))
    throw Error("random weights: the gain must be in [0, " + std::to_string(kMaxRandomGain) +
                "], got " + std::to_string(spec.gain));
  const float base_scale = spec.gain / std::sqrt(static_cast<float>(spec.in_features));
  switch (spec.type) {
  case GgmlType::Q1_0:
    if (out.size() % sizeof(BlockQ1_0) != 0)
      break;
    return fill_q1_blocks(rng, base_scale, out);
  case GgmlType::Q2_0:
    if (out.size() % sizeof(BlockQ2_0) != 0)
      break;
    return fill_q2_blocks(rng, std::sqrt(1.5f) * base_scale, out);
  default:
    if (traits_of(spec.type).ternary)
      return fill_other_ternary(spec, rng, std::sqrt(1.5f) * base_scale, out);
    throw Error("random weights can only be made as q1_0 or a ternary type, not " +
                std::string(type_name(static_cast<uint32_t>(spec.type))));
  }
  throw Error("random weights: " + std::to_string(out.size()) + " bytes is not a whole number of " +
              std::string(type_name(static_cast<uint32_t>(spec.type))) + " blocks");
}

void fill_random_floats(const RandomFloatSpec &spec, std::span<uint8_t> out) {
  if (out.size() % sizeof(float) != 0)
    throw Error("random f32 values: " + std::to_string(out.size()) +
                " bytes is not a whole number of f32 values");
  FastRng rng(spec.seed);
  for (size_t at = 0; at < out.size(); at += sizeof(float)) {
    const float value = spec.low + (spec.high - spec.low) * rng.uniform();
    std::memcpy(out.data() + at, &value, sizeof value);
  }
}

void fill_random_norm(uint64_t seed, std::span<uint8_t> out) {
  fill_random_floats({seed, 0.8f, 1.2f}, out);
}

} // namespace bonsai::tools
