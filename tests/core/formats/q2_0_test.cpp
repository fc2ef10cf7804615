// Q2_0 (ternary, group 128): hand-built blocks and hand-computed quantization.
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "bonsai/core/formats.hpp"

namespace bonsai {
namespace {

TEST(Q2_0, DequantizeHandBuiltBlock) {
  BlockQ2_0 block{};
  block.d = 0x3400;                                   // 0.25
  std::memset(block.codes, 0x55, sizeof block.codes); // 01 01 01 01: code 1 -> 0
  block.codes[0] = 0xE4;  // 11 10 01 00: codes 0, 1, 2, 3 for elements 0..3
  block.codes[1] = 0x1B;  // 00 01 10 11: codes 3, 2, 1, 0 for elements 4..7
  block.codes[31] = 0x80; // 10 00 00 00: codes 0, 0, 0, 2 for elements 124..127

  std::array<float, 128> expected{};
  const float head[8] = {-0.25f, 0.0f, 0.25f, 0.5f, 0.5f, 0.25f, 0.0f, -0.25f};
  for (int j = 0; j < 8; ++j)
    expected[j] = head[j];
  expected[124] = -0.25f;
  expected[125] = -0.25f;
  expected[126] = -0.25f;
  expected[127] = 0.25f;

  std::array<float, 128> got{};
  dequantize_row(GgmlType::Q2_0, &block, got.data(), 128);
  for (int j = 0; j < 128; ++j)
    EXPECT_EQ(got[j], expected[j]) << "element " << j;
}

TEST(Q2_0, EachBlockUsesItsOwnScale) {
  BlockQ2_0 blocks[2]{};
  blocks[0].d = 0x3C00;                                       // 1.0
  std::memset(blocks[0].codes, 0xAA, sizeof blocks[0].codes); // code 2 everywhere -> +1
  blocks[1].d = 0xC000;                                       // -2.0: sign flips the codes
  std::memset(blocks[1].codes, 0x00, sizeof blocks[1].codes); // code 0 -> -d = +2
  std::vector<float> got(256);
  dequantize_row(GgmlType::Q2_0, blocks, got.data(), 256);
  for (int j = 0; j < 128; ++j)
    EXPECT_EQ(got[j], 1.0f);
  for (int j = 128; j < 256; ++j)
    EXPECT_EQ(got[j], 2.0f);
}

TEST(Q2_0, QuantizeKnownVector) {
  // Pattern sum |w| = 8.5 per 8 -> d = 1.0625 (f16 0x3C40). Ratios w/d:
  // 1.41 -> 2, -1.41 -> 0, +-0.47 -> 1, +-0.24 -> 1, 1.88 -> 2, -1.88 -> 0.
  const float pattern[8] = {1.5f, -1.5f, 0.5f, -0.5f, 0.25f, -0.25f, 2.0f, -2.0f};
  std::vector<float> w(128);
  for (int j = 0; j < 128; ++j)
    w[j] = pattern[j % 8];
  BlockQ2_0 block{};
  quantize_row(GgmlType::Q2_0, w.data(), &block, 128);
  EXPECT_EQ(block.d, 0x3C40);
  // codes 2,0,1,1 -> 0b01010010 = 0x52; codes 1,1,2,0 -> 0b00100101 = 0x25.
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(block.codes[i], i % 2 == 0 ? 0x52 : 0x25) << "byte " << i;
}

TEST(Q2_0, HalfOfScaleRoundsAwayFromZero) {
  // Mean |w| of {0.5, -0.5, 1.5, -1.5} is exactly 1, so w / d = +-0.5 is a tie.
  const float pattern[4] = {0.5f, -0.5f, 1.5f, -1.5f};
  std::vector<float> w(128);
  for (int j = 0; j < 128; ++j)
    w[j] = pattern[j % 4];
  BlockQ2_0 block{};
  quantize_row(GgmlType::Q2_0, w.data(), &block, 128);
  EXPECT_EQ(block.d, 0x3C00);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(block.codes[i], 0x22) << "byte " << i; // codes 2, 0, 2, 0
}

TEST(Q2_0, AllZeroBlockAndNan) {
  std::vector<float> w(128, 0.0f);
  BlockQ2_0 block{};
  quantize_row(GgmlType::Q2_0, w.data(), &block, 128);
  EXPECT_EQ(block.d, 0x0000);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(block.codes[i], 0x55); // code 1 everywhere

  for (int j = 0; j < 128; ++j)
    w[j] = (j % 2) ? 1.0f : -1.0f;
  w[0] = std::numeric_limits<float>::quiet_NaN(); // mean becomes NaN: every code 1
  quantize_row(GgmlType::Q2_0, w.data(), &block, 128);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(block.codes[i], 0x55);
}

} // namespace
} // namespace bonsai
