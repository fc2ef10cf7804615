// Q8_0 and the plain float row types.
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "bonsai/core/formats.hpp"

namespace bonsai {
namespace {

TEST(Q8_0, DequantizeHandBuiltBlock) {
  BlockQ8_0 block{};
  block.d = 0x3800; // 0.5
  const int8_t qs[6] = {-127, -1, 0, 1, 2, 127};
  std::memcpy(block.qs, qs, sizeof qs);
  std::array<float, 32> got{};
  dequantize_row(GgmlType::Q8_0, &block, got.data(), 32);
  const float expected[6] = {-63.5f, -0.5f, 0.0f, 0.5f, 1.0f, 63.5f};
  for (int j = 0; j < 6; ++j)
    EXPECT_EQ(got[j], expected[j]) << "element " << j;
  for (int j = 6; j < 32; ++j)
    EXPECT_EQ(got[j], 0.0f);
}

TEST(Q8_0, QuantizeRoundsHalfAwayFromZero) {
  // max |w| = 127 -> d = 1 exactly, so q = round(w).
  std::array<float, 32> w{};
  w[0] = 127.0f;
  w[1] = 2.5f;  // tie -> 3 (nearest-even would give 2)
  w[2] = -2.5f; // tie -> -3
  w[3] = 0.4f;
  w[4] = -0.6f;
  w[5] = -127.0f;
  BlockQ8_0 block{};
  quantize_row(GgmlType::Q8_0, w.data(), &block, 32);
  EXPECT_EQ(block.d, 0x3C00);
  const int8_t expected[6] = {127, 3, -3, 0, -1, -127};
  for (int j = 0; j < 6; ++j)
    EXPECT_EQ(block.qs[j], expected[j]) << "element " << j;
  for (int j = 6; j < 32; ++j)
    EXPECT_EQ(block.qs[j], 0);
}

TEST(Q8_0, ScaleIsMaxOver127RoundedToF16) {
  // d = 1/127 = 0.0078740..., f16: 2^-7 * (1 + 8/1024) = 0x2008.
  std::array<float, 32> w{};
  w[0] = 1.0f;
  w[1] = -0.25f; // 0.25 * 127 = 31.75 -> -32
  BlockQ8_0 block{};
  quantize_row(GgmlType::Q8_0, w.data(), &block, 32);
  EXPECT_EQ(block.d, 0x2008);
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.qs[1], -32);
}

TEST(Q8_0, ZeroAndNanBlocks) {
  std::array<float, 32> w{};
  BlockQ8_0 block{};
  quantize_row(GgmlType::Q8_0, w.data(), &block, 32);
  EXPECT_EQ(block.d, 0x0000);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(block.qs[j], 0);
  w[0] = 127.0f;
  w[1] = std::numeric_limits<float>::quiet_NaN();
  quantize_row(GgmlType::Q8_0, w.data(), &block, 32);
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.qs[1], 0);
}

TEST(FloatRows, F16AndBf16FromUnalignedBytes) {
  // little-endian 0x3C00 (1.0), 0xC000 (-2.0), stored at an odd address
  const uint8_t f16[5] = {0xEE, 0x00, 0x3C, 0x00, 0xC0};
  float got[2] = {};
  dequantize_row(GgmlType::F16, f16 + 1, got, 2);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], -2.0f);
  const uint8_t bf16[5] = {0xEE, 0x80, 0x3F, 0x49, 0x40}; // 0x3F80, 0x4049
  dequantize_row(GgmlType::BF16, bf16 + 1, got, 2);
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 3.140625f);
}

TEST(FloatRows, QuantizeF16AndBf16) {
  const float w[3] = {1.0f, -2.0f, 65520.0f};
  uint8_t out[6] = {};
  quantize_row(GgmlType::F16, w, out, 3);
  const uint8_t expected_f16[6] = {0x00, 0x3C, 0x00, 0xC0, 0x00, 0x7C};
  EXPECT_EQ(std::memcmp(out, expected_f16, 6), 0);
  quantize_row(GgmlType::BF16, w, out, 3);
  // 65520 = 0x477FF000 -> bf16 0x4780 (low half 0xF000 rounds up)
  const uint8_t expected_bf16[6] = {0x80, 0x3F, 0x00, 0xC0, 0x80, 0x47};
  EXPECT_EQ(std::memcmp(out, expected_bf16, 6), 0);
}

TEST(FloatRows, F32IsACopy) {
  const float w[2] = {1.25f, -3.0f};
  float out[2] = {};
  quantize_row(GgmlType::F32, w, out, 2);
  EXPECT_EQ(out[0], 1.25f);
  float back[2] = {};
  dequantize_row(GgmlType::F32, out, back, 2);
  EXPECT_EQ(back[1], -3.0f);
}

} // namespace
} // namespace bonsai
