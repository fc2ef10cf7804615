#pragma once
// Random weights for synthetic models: whole quantized blocks straight from a
// fast PRNG (no float quantization), so a multi-GB model takes seconds.
#include <cstdint>
#include <span>
#include <string_view>

#include "bonsai/core/formats.hpp"

namespace bonsai::tools {

// xoshiro256** seeded through splitmix64: fast, good enough for test weights,
// and fully specified, so a seed gives the same file everywhere.
class FastRng {
public:
  explicit FastRng(uint64_t seed);
  uint64_t next();
  float uniform(); // [0, 1), 24 random bits

private:
  uint64_t s_[4];
};

// A seed for one tensor, derived from the model seed and the tensor's name so
// each tensor's bytes do not depend on the order they are produced in.
uint64_t tensor_seed(uint64_t model_seed, std::string_view tensor_name);

struct RandomMatrixSpec {
  GgmlType type = GgmlType::Q1_0; // Q1_0 or a ternary type
  int64_t in_features = 0;        // ne0: sets the scale so outputs stay O(1)
  uint64_t seed = 0;
  float gain = 1.0f; // multiplies every block's scale (make-model --layer-gain)
};

// The largest gain: keeps every block's f16 scale far below f16's largest
// value at any input width.
constexpr float kMaxRandomGain = 1000.0f;

// Fills `out` (whole blocks) with random blocks: Q1_0 random sign bits, Q2_0
// random codes 0..2 (other ternary types: the same, converted exactly); each block's d = c /
// sqrt(in_features) * U[0.5, 1.5) * gain with c = 1 (Q1_0) or sqrt(1.5) (Q2_0, a third of whose
// weights are zero), so a row dotted with an O(1) vector gives O(1). Throws bonsai::Error for
// another type or a size that is not a whole number of blocks.
void fill_random_matrix(const RandomMatrixSpec &spec, std::span<uint8_t> out);

struct RandomFloatSpec {
  uint64_t seed = 0;
  float low = 0.0f; // values are uniform in [low, high)
  float high = 1.0f;
};
// Fills `out` with f32 values uniform in [low, high).
void fill_random_floats(const RandomFloatSpec &spec, std::span<uint8_t> out);

// Fills `out` with f32 values uniform in [0.8, 1.2): RMSNorm weights far enough
// from 1 that a misplaced norm shows.
void fill_random_norm(uint64_t seed, std::span<uint8_t> out);

} // namespace bonsai::tools
