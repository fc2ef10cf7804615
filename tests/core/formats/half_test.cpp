// f16 / bf16 conversions against hand-derived bit patterns.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "bonsai/core/formats.hpp"

namespace bonsai {
namespace {

float from_bits(uint32_t bits) {
  return std::bit_cast<float>(bits);
}

TEST(Fp16ToF32, NormalValues) {
  EXPECT_EQ(fp16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_f32(0x3800), 0.5f);
  EXPECT_EQ(fp16_to_f32(0x3555), 0.333251953125f); // (1024 + 341) / 1024 * 2^-2
  EXPECT_EQ(fp16_to_f32(0x7BFF), 65504.0f);        // largest finite half
  EXPECT_EQ(fp16_to_f32(0x0400), std::ldexp(1.0f, -14));
}

TEST(Fp16ToF32, ZerosAndDenormals) {
  EXPECT_EQ(std::bit_cast<uint32_t>(fp16_to_f32(0x0000)), 0x00000000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(fp16_to_f32(0x8000)), 0x80000000u); // -0 keeps its sign
  EXPECT_EQ(fp16_to_f32(0x0001), std::ldexp(1.0f, -24));                // smallest denormal
  EXPECT_EQ(fp16_to_f32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_f32(0x0200), std::ldexp(1.0f, -15));
  EXPECT_EQ(fp16_to_f32(0x03FF), 1023.0f * std::ldexp(1.0f, -24)); // largest denormal
}

TEST(Fp16ToF32, InfinityAndNan) {
  EXPECT_EQ(fp16_to_f32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(fp16_to_f32(0x7C01))); // signalling NaN, lowest payload
  EXPECT_TRUE(std::signbit(fp16_to_f32(0xFE00)));
}

// Every one of the 65536 patterns against the textbook formula, computed
// independently in double.
TEST(Fp16ToF32, AllPatternsMatchFormula) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const int exp = (h >> 10) & 0x1F;
    const int mant = h & 0x3FF;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    const float got = fp16_to_f32(static_cast<uint16_t>(h));
    if (exp == 31) {
      EXPECT_EQ(std::isnan(got), mant != 0) << std::hex << h;
      continue;
    }
    const double expected =
        exp == 0 ? sign * std::ldexp(mant, -24) : sign * std::ldexp(1024 + mant, exp - 25);
    ASSERT_EQ(static_cast<double>(got), expected) << std::hex << h;
  }
}

TEST(F32ToFp16, ExactValues) {
  EXPECT_EQ(f32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(f32_to_fp16(0.1f), 0x2E66); // 0.1 = 1.6 * 2^-4, 0.6 * 1024 = 614.4 -> 614
}

TEST(F32ToFp16, RoundsTiesToEven) {
  // 1 + 2^-11 is halfway between 0x3C00 (even) and 0x3C01.
  EXPECT_EQ(f32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between 0x3C01 and 0x3C02 (even).
  EXPECT_EQ(f32_to_fp16(1.0f + 3.0f * std::ldexp(1.0f, -11)), 0x3C02);
  // Just above the tie rounds up.
  EXPECT_EQ(f32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // Just below 1 + 2^-10 (0x3C01) rounds to it.
  EXPECT_EQ(f32_to_fp16(std::nextafter(1.0f + std::ldexp(1.0f, -10), 0.0f)), 0x3C01);
  EXPECT_EQ(f32_to_fp16(-(1.0f + std::ldexp(1.0f, -11))), 0xBC00);
}

TEST(F32ToFp16, DenormalRounding) {
  // 2^-25 is halfway between 0 and the smallest denormal: ties to even -> 0.
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32_to_fp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  // 3 * 2^-25 is halfway between 0x0001 and 0x0002 (even).
  EXPECT_EQ(f32_to_fp16(3.0f * std::ldexp(1.0f, -25)), 0x0002);
  // 5 * 2^-25 is halfway between 0x0002 (even) and 0x0003.
  EXPECT_EQ(f32_to_fp16(5.0f * std::ldexp(1.0f, -25)), 0x0002);
  // Halfway between the largest denormal and the smallest normal -> normal (even).
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);
  EXPECT_EQ(f32_to_fp16(-std::ldexp(1.0f, -24)), 0x8001);
  // f32 denormals are far below half the smallest half denormal.
  EXPECT_EQ(f32_to_fp16(1e-40f), 0x0000);
  EXPECT_EQ(f32_to_fp16(-1e-40f), 0x8000);
}

TEST(F32ToFp16, OverflowAndSpecials) {
  // 65520 is halfway between 65504 (odd mantissa) and 65536: rounds to inf.
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7C00);
  EXPECT_EQ(f32_to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(f32_to_fp16(1e6f), 0x7C00);
  EXPECT_EQ(f32_to_fp16(-1e6f), 0xFC00);
  EXPECT_EQ(f32_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(F32ToFp16, NanStaysNan) {
  const auto is_half_nan = [](uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0; };
  EXPECT_TRUE(is_half_nan(f32_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  // Payload only in the low 13 bits would vanish in the shift: must not become inf.
  EXPECT_TRUE(is_half_nan(f32_to_fp16(from_bits(0x7F800001u))));
  const uint16_t negative = f32_to_fp16(from_bits(0xFFC00000u));
  EXPECT_TRUE(is_half_nan(negative));
  EXPECT_TRUE(negative & 0x8000);
}

TEST(F32ToFp16, EveryHalfSurvivesTheRoundTrip) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
    if (nan)
      continue;
    ASSERT_EQ(f32_to_fp16(fp16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(Bf16, ToF32) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
  EXPECT_EQ(bf16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(bf16_to_f32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7FC0)));
  EXPECT_EQ(bf16_to_f32(0x0001), from_bits(0x00010000u)); // denormal
}

TEST(Bf16, FromF32RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(from_bits(0x40490FDBu)), 0x4049); // pi: low half 0x0FDB < 0x8000
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F808000u)), 0x3F80); // tie, even stays
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F818000u)), 0x3F82); // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F808001u)), 0x3F81); // above tie
  EXPECT_EQ(f32_to_bf16(from_bits(0x00018000u)), 0x0002); // denormal tie -> even
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16, FromF32Specials) {
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80); // rounds up to inf
  EXPECT_EQ(f32_to_bf16(from_bits(0x7F7F7FFFu)), 0x7F7F);            // stays finite
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  const uint16_t nan = f32_to_bf16(from_bits(0x7F800001u)); // payload below bit 16
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
  EXPECT_TRUE(f32_to_bf16(from_bits(0xFFC00000u)) & 0x8000);
}

} // namespace
} // namespace bonsai
