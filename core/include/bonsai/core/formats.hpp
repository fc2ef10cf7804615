#pragma once
// Weight formats: ggml type ids, block layouts, row sizes and the reference
// (scalar, exact) quantize/dequantize used by tests, tools and plugins.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace bonsai {

// Weight encodings, numbered by their ggml type id as stored in the GGUF
// tensor table, except Q2_0_G64: ggml id 42 names two layouts in the wild
// (PrismML's 128 per block, mainline llama.cpp's 64 per block), which only
// the tensor sizes tell apart (gguf::File decides), so the 64-per-block one
// gets a bonsai id of its own. The same numbers cross the plugin ABI.
// Ternary values are (code - 1) * d; docs/formats.md has every layout.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2, // 32 weights = f16 d + 16 bytes of 4-bit q; value (q - 8) * d
  Q8_0 = 8,
  BF16 = 30,
  TQ1_0 = 34,      // ggml ternary: 256 weights in 54 bytes (base-3 digits, then f16 d)
  TQ2_0 = 35,      // ggml ternary: 256 weights in 66 bytes (2-bit codes, then f16 d)
  Q1_0 = 41,       // 1-bit: 128 weights = f16 d + 16 bytes of signs
  Q2_0 = 42,       // ternary (group 128, PrismML): f16 d + 32 bytes of 2-bit codes
  PQ2_0 = 142,     // PrismML's id for the Q2_0 group-128 layout
  PTQ1_0 = 143,    // PrismML ternary: 128 weights in 28 bytes (base-3 digits, then f16 d)
  Q2_0_G64 = 1042, // mainline llama.cpp's Q2_0 (file id 42): f16 d + 16 bytes of codes
};

inline constexpr int kQ1BlockSize = 128;
inline constexpr int kQ2BlockSize = 128;
inline constexpr int kQ2G64BlockSize = 64;
inline constexpr int kQ4BlockSize = 32;
inline constexpr int kQ8BlockSize = 32;
inline constexpr int kPtq1BlockSize = 128;
inline constexpr int kTqBlockSize = 256;

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
// Mainline Q2_0: code j = bits 2*(j%4).. of byte j/4, as BlockQ2_0.
struct BlockQ2_0G64 {
  uint16_t d; // f16 scale
  uint8_t codes[kQ2G64BlockSize / 4];
};
// q j = low nibble of qs[j] (j < 16) or high nibble of qs[j - 16].
struct BlockQ4_0 {
  uint16_t d; // f16 scale
  uint8_t qs[kQ4BlockSize / 2];
};
// Base-3 digits, five per byte (qh: four): digit n of byte b is
// ((b * 3^n mod 256) * 3) >> 8. Element e < 80: qs[e % 16] digit e / 16;
// e < 120: qs[16 + (e - 80) % 8] digit (e - 80) / 8; else qh[(e - 120) % 2]
// digit (e - 120) / 2.
struct BlockPTQ1_0 {
  uint8_t qs[24];
  uint8_t qh[2];
  uint16_t d; // f16 scale, last
};
// As PTQ1_0 with groups of 32, 16 and 4 bytes (160, 80 and 16 elements).
struct BlockTQ1_0 {
  uint8_t qs[48];
  uint8_t qh[4];
  uint16_t d;
};
// Element e in byte 32 * (e / 128) + e % 32 at bit 2 * ((e % 128) / 32).
struct BlockTQ2_0 {
  uint8_t qs[64];
  uint16_t d;
};
#pragma pack(pop)
static_assert(sizeof(BlockQ1_0) == 18);
static_assert(sizeof(BlockQ2_0) == 34);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_0G64) == 18);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockPTQ1_0) == 28);
static_assert(sizeof(BlockTQ1_0) == 54);
static_assert(sizeof(BlockTQ2_0) == 66);

struct TypeTraits {
  GgmlType type;
  std::string_view name;        // "q1_0", "f32", ...
  int64_t block_elements;       // weights per block (1 for plain float types)
  size_t block_bytes;           // bytes per block
  uint32_t file_id;             // the ggml id a GGUF file stores (42 for Q2_0_G64)
  std::string_view description; // "Q2_0 (64 per block, mainline llama.cpp)"
  bool ternary;                 // values (code - 1) * d with codes 0..2 (3 read as +2d)
};

// Traits of a type id; std::nullopt for an id this project does not know.
std::optional<TypeTraits> type_traits(uint32_t type_id);
// Traits of a type id as a GGUF file stores it: every id above except 1042
// (a file stores Q2_0_G64 as 42, which this returns as Q2_0).
std::optional<TypeTraits> file_type_traits(uint32_t file_id);
// Same, for a GgmlType. Never fails for the enumerators above; throws
// bonsai::Error for a value cast from an unknown id.
TypeTraits traits_of(GgmlType type);
std::string_view type_name(uint32_t type_id); // "unknown" for unknown ids
// "Q2_0 (128 per block, PrismML)", ...; "unknown type N" for unknown ids.
std::string type_description(GgmlType type);
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
//   Other ternary types (Q2_0_G64, PQ2_0, PTQ1_0, TQ1_0, TQ2_0): as Q2_0,
//         one d per block of the type.
//   Q8_0: d = max |w| / 127, q = clamp(round(w / d), -127, 127); d = 0 -> 0.
//   Q4_0: as ggml: m = the value of largest magnitude, d = m / -8,
//         q = min(15, trunc(w / d + 8.5)).
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
