// IEEE binary16 and bfloat16 <-> binary32 conversions, portable scalar code.
// Everything is done on the bit patterns so the result does not depend on
// the FPU's rounding mode or on flush-to-zero settings.
#include <bit>
#include <cstdint>

#include "bonsai/core/formats.hpp"

namespace bonsai {
namespace {

constexpr uint32_t kF32SignMask = 0x80000000u;
constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32ExpMask = 0x7F800000u;
constexpr uint32_t kF32MantMask = 0x007FFFFFu;
constexpr uint32_t kF32Infinity = 0x7F800000u;
// Smallest f32 whose magnitude rounds to the f16 infinity: 65520 is halfway
// between 65504 (largest half, odd mantissa) and 65536, so ties go up.
constexpr uint32_t kF32HalfOverflow = 0x477FF000u;
// 2^-14, the smallest normal half.
constexpr uint32_t kF32HalfMinNormal = 0x38800000u;
// Exponent bias difference between f32 (127) and f16 (15).
constexpr uint32_t kBiasDelta = 112;

// Shifts `value` right by `shift` bits, rounding to nearest, ties to even.
uint32_t shift_right_round_even(uint32_t value, uint32_t shift) {
  if (shift == 0)
    return value;
  if (shift >= 32)
    return 0;
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u)))
    return kept + 1u;
  return kept;
}

} // namespace

float fp16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) // infinity or NaN: keep the payload
    return std::bit_cast<float>(sign | kF32Infinity | (mant << 13));
  if (exp != 0)
    return std::bit_cast<float>(sign | ((exp + kBiasDelta) << 23) | (mant << 13));
  if (mant == 0)
    return std::bit_cast<float>(sign);
  // Denormal: mant * 2^-24. Normalise so the leading one becomes implicit.
  uint32_t e = kBiasDelta + 1; // f32 exponent of 2^-14
  uint32_t m = mant;
  while ((m & 0x400u) == 0) {
    m <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (e << 23) | ((m & 0x3FFu) << 13));
}

uint16_t f32_to_fp16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits & kF32SignMask) >> 16);
  const uint32_t abs = bits & kF32AbsMask;
  if (abs > kF32Infinity) // NaN: quiet it so a payload lost in the shift cannot turn it into inf
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs & kF32MantMask) >> 13));
  if (abs >= kF32HalfOverflow)
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (abs >= kF32HalfMinNormal) {
    // Rebias, then round the 13 dropped mantissa bits; a carry out of the
    // mantissa correctly bumps the exponent.
    const uint32_t rebased = abs - (kBiasDelta << 23);
    return static_cast<uint16_t>(sign | shift_right_round_even(rebased, 13));
  }
  // Result is a half denormal (or zero): round(|f| * 2^24).
  const uint32_t exp = (abs & kF32ExpMask) >> 23;
  if (exp == 0) // f32 zero or denormal (< 2^-126): far below half the smallest half denormal
    return sign;
  const uint32_t mant = (abs & kF32MantMask) | 0x800000u; // |f| = mant * 2^(exp-150)
  const uint32_t shift = 126 - exp;                       // |f| * 2^24 = mant >> shift
  return static_cast<uint16_t>(sign | shift_right_round_even(mant, shift));
}

float bf16_to_f32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

uint16_t f32_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & kF32AbsMask) > kF32Infinity) // NaN: keep sign and top payload, force quiet
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Round to nearest even; overflow of the largest finite values correctly
  // carries into the infinity pattern.
  return static_cast<uint16_t>(shift_right_round_even(bits, 16));
}

} // namespace bonsai
