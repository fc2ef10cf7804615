// Q1_0: hand-built blocks and hand-computed quantization results.
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "bonsai/core/formats.hpp"

namespace bonsai {
namespace {

TEST(Q1_0, DequantizeHandBuiltBlock) {
  BlockQ1_0 block{};
  block.d = 0x3800; // 0.5
  const uint8_t signs[16] = {0x01, 0x80, 0xFF, 0x00, 0xAA, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40};
  std::memcpy(block.signs, signs, sizeof signs);

  constexpr float P = 0.5f, N = -0.5f;
  // clang-format off
  const std::array<float, 128> expected = {
      P, N, N, N, N, N, N, N, // 0x01: bit 0 only
      N, N, N, N, N, N, N, P, // 0x80: bit 7 only
      P, P, P, P, P, P, P, P, // 0xFF
      N, N, N, N, N, N, N, N, // 0x00
      N, P, N, P, N, P, N, P, // 0xAA: bits 1, 3, 5, 7
      N, N, N, N, N, N, N, N, // 0x00 (byte 5)
      N, N, N, N, N, N, N, N, // 0x00 (byte 6)
      N, N, N, N, N, N, N, N, // 0x00 (byte 7)
      N, N, N, N, N, N, N, N, // 0x00 (byte 8)
      N, N, N, N, N, N, N, N, // 0x00 (byte 9)
      N, N, N, N, N, N, N, N, // 0x00 (byte 10)
      N, N, N, N, N, N, N, N, // 0x00 (byte 11)
      N, N, N, N, N, N, N, N, // 0x00 (byte 12)
      N, N, N, N, N, N, N, N, // 0x00 (byte 13)
      N, N, N, N, N, N, N, N, // 0x00 (byte 14)
      N, N, N, N, N, N, P, N, // 0x40: bit 6 -> element 126
  };
  // clang-format on
  std::array<float, 128> got{};
  dequantize_row(GgmlType::Q1_0, &block, got.data(), 128);
  for (int j = 0; j < 128; ++j)
    EXPECT_EQ(got[j], expected[j]) << "element " << j;
}

TEST(Q1_0, EachBlockUsesItsOwnScale) {
  BlockQ1_0 blocks[2]{};
  blocks[0].d = 0x3C00; // 1.0, all bits clear
  blocks[1].d = 0x3E00; // 1.5, all bits set
  std::memset(blocks[1].signs, 0xFF, sizeof blocks[1].signs);
  std::vector<float> got(256);
  dequantize_row(GgmlType::Q1_0, blocks, got.data(), 256);
  for (int j = 0; j < 128; ++j)
    EXPECT_EQ(got[j], -1.0f);
  for (int j = 128; j < 256; ++j)
    EXPECT_EQ(got[j], 1.5f);
}

TEST(Q1_0, DequantizeFromUnalignedBytes) {
  // GGUF rows follow each other at 18-byte strides: blocks are not aligned.
  std::vector<uint8_t> bytes(1 + sizeof(BlockQ1_0), 0);
  bytes[1] = 0x00;
  bytes[2] = 0x40; // d = 2.0 (0x4000, little-endian)
  bytes[3] = 0x02; // element 1 positive
  std::vector<float> got(128);
  dequantize_row(GgmlType::Q1_0, bytes.data() + 1, got.data(), 128);
  EXPECT_EQ(got[0], -2.0f);
  EXPECT_EQ(got[1], 2.0f);
  EXPECT_EQ(got[127], -2.0f);
}

TEST(Q1_0, QuantizeKnownVector) {
  // |w| = 1, 2, 3, 4 repeating (mean 2.5 = f16 0x4100); w negative where j % 3 == 0.
  std::vector<float> w(128);
  for (int j = 0; j < 128; ++j)
    w[j] = static_cast<float>(j % 4 + 1) * (j % 3 == 0 ? -1.0f : 1.0f);
  BlockQ1_0 block{};
  quantize_row(GgmlType::Q1_0, w.data(), &block, 128);
  EXPECT_EQ(block.d, 0x4100);
  // Bits set where j % 3 != 0; the pattern repeats every 24 elements = 3 bytes:
  // j 0..7 -> 0b10110110, j 8..15 -> 0b01101101, j 16..23 -> 0b11011011.
  const uint8_t expected[16] = {0xB6, 0x6D, 0xDB, 0xB6, 0x6D, 0xDB, 0xB6, 0x6D,
                                0xDB, 0xB6, 0x6D, 0xDB, 0xB6, 0x6D, 0xDB, 0xB6};
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(block.signs[i], expected[i]) << "byte " << i;
}

TEST(Q1_0, QuantizeScaleIsRoundedToF16) {
  // Mean |w| = 0.1, stored as the nearest half 0x2E66 (0.0999755859375).
  std::vector<float> w(128);
  for (int j = 0; j < 128; ++j)
    w[j] = (j % 2) ? 0.1f : -0.1f;
  BlockQ1_0 block{};
  quantize_row(GgmlType::Q1_0, w.data(), &block, 128);
  EXPECT_EQ(block.d, 0x2E66);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(block.signs[i], 0xAA);
  std::vector<float> back(128);
  dequantize_row(GgmlType::Q1_0, &block, back.data(), 128);
  EXPECT_EQ(back[0], -0.0999755859375f);
  EXPECT_EQ(back[1], 0.0999755859375f);
}

TEST(Q1_0, ZeroAndNegativeZeroCountAsPositive) {
  // Mean |w| = 126 / 128 = 0.984375 = f16 0x3BE0 (63/64).
  std::vector<float> w(128, -1.0f);
  w[0] = 0.0f;
  w[1] = -0.0f;
  BlockQ1_0 block{};
  quantize_row(GgmlType::Q1_0, w.data(), &block, 128);
  EXPECT_EQ(block.d, 0x3BE0);
  EXPECT_EQ(block.signs[0], 0x03);
  for (int i = 1; i < 16; ++i)
    EXPECT_EQ(block.signs[i], 0x00);
}

TEST(Q1_0, NanWeightDoesNotCrash) {
  std::vector<float> w(128, 1.0f);
  w[5] = std::numeric_limits<float>::quiet_NaN();
  BlockQ1_0 block{};
  quantize_row(GgmlType::Q1_0, w.data(), &block, 128);
  EXPECT_EQ(block.signs[0], 0xDF); // NaN >= 0 is false: bit 5 clear
}

} // namespace
} // namespace bonsai
