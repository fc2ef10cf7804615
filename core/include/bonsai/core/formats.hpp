#pragma once
// Weight formats: ggml type ids, block layouts, row sizes and the reference
// (scalar, exact) quantize/dequantize used by tests, tools and plugins.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace bonsai {

// ggml type ids as stored in the GGUF tensor table.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q8_0 = 8,
  BF16 = 30,
  Q1_0 = 41, // 1-bit: 128 weights = f16 d + 16 bytes of signs
  Q2_0 = 42, // ternary (group 128): f16 d + 32 bytes of 2-bit codes
};

inline constexpr int kQ1BlockSize = 128;
inline constexpr int kQ2BlockSize = 128;
inline constexpr int kQ8BlockSize = 32;

#pragma pack(push, 1)
// bit j (byte j/8, LSB first) set -> +d, clear -> -d.
struct BlockQ1_0 {
  uint16_t d; // f16 scale
  uint8_t signs[kQ1BlockSize / 8];
};
// code j = bits 2*(j%4)..2*(j%4)+1 of byte j/4; value (code - 1) * d.
struct BlockQ2_0 {
  uint16_t d; // f16 scale
  uint8_t codes[kQ2BlockSize / 4];
};
// value j = qs[j] * d.
struct BlockQ8_0 {
  uint16_t d; // f16 scale
  int8_t qs[kQ8BlockSize];
};
#pragma pack(pop)
static_assert(sizeof(BlockQ1_0) == 18);
static_assert(sizeof(BlockQ2_0) == 34);
static_assert(sizeof(BlockQ8_0) == 34);

struct TypeTraits {
  GgmlType type;
  std::string_view name;  // "q1_0", "f32", ...
  int64_t block_elements; // weights per block (1 for plain float types)
  size_t block_bytes;     // bytes per block
};

// Traits of a type id; std::nullopt for an id this project does not know.
std::optional<TypeTraits> type_traits(uint32_t type_id);
// Same, for a GgmlType. Never fails for the enumerators above; throws
// bonsai::Error for a value cast from an unknown id.
TypeTraits traits_of(GgmlType type);
std::string_view type_name(uint32_t type_id); // "unknown" for unknown ids
// Inverse of type_name ("q1_0" -> Q1_0); case-sensitive, nullopt if unknown.
std::optional<GgmlType> type_from_name(std::string_view name);

// Bytes of a row of n elements. Throws bonsai::Error when n is negative, not
// a whole number of blocks, or the size does not fit in size_t.
size_t row_bytes(GgmlType type, int64_t n);

// Reference dequantize: n elements (a whole number of blocks) from src, which
// holds row_bytes(type, n) bytes. Throws bonsai::Error like row_bytes.
void dequantize_row(GgmlType type, const void *src, float *dst, int64_t n);
// Reference quantize: n elements into dst (row_bytes(type, n) bytes). Throws
// bonsai::Error like row_bytes. Scales are computed in f32 and stored as f16;
// the codes are chosen with the f32 scale (as ggml's reference code does).
// `round` is round-half-away-from-zero (std::round). NaN weights never cause
// UB: Q1_0 clears their bit, Q8_0 stores 0 for them, and since a NaN makes
// the Q1_0/Q2_0 block mean (d) NaN, every code of such a Q2_0 block is 1.
//   Q1_0: d = mean |w| of the block, bit = (w >= 0) (so -0.0 gives +d).
//   Q2_0: absmean ternary (as BitNet b1.58): d = mean |w| of the block,
//         code = 1 + clamp(round(w / d), -1, 1); codes 0, 1, 2 only (3 is
//         never written, but dequantize accepts it as +2d). d = 0 -> code 1.
//   Q8_0: d = max |w| / 127, q = clamp(round(w / d), -127, 127); d = 0 -> 0.
//   F16 / BF16: round to nearest even; F32: copy.
void quantize_row(GgmlType type, const float *src, void *dst, int64_t n);

// IEEE half and bfloat16 conversions (round to nearest even). Portable scalar
// code: denormals, infinities and NaN are handled exactly; a NaN stays a NaN
// (quiet bit set, sign and top payload bits kept); f32 values too large for
// f16 become infinity.
float fp16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);

} // namespace bonsai
