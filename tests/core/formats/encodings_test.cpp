// The encodings in circulation (docs/formats.md): each layout decoded at
// elements whose place and value were worked out by hand from the layout
// descriptions in tests/data/README.md, and the exact conversions between
// them, including the refusals.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/core/convert.hpp"
#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"

namespace bonsai {
namespace {

using ::testing::HasSubstr;

constexpr uint16_t kHalf = 0x3800;  // 0.5
constexpr uint16_t kTwo = 0x4000;   // 2.0
constexpr uint16_t kThree = 0x4200; // 3.0

template <class Block> std::vector<float> decode(GgmlType type, const Block &block, int n) {
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(type, &block, out.data(), n);
  return out;
}

std::string error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(Encodings, Q2G64HasOneScalePerSixtyFourWeights) {
  BlockQ2_0G64 blocks[2] = {};
  blocks[0].d = kHalf;
  blocks[1].d = kTwo;
  blocks[0].codes[0] = 0b10'01'00'10;  // elements 0..3: codes 2, 0, 1, 2
  blocks[1].codes[15] = 0b11'00'00'00; // element 64 + 63: code 3, read as +2d
  const auto v = decode(GgmlType::Q2_0_G64, blocks, 128);
  EXPECT_EQ(v[0], 0.5f);
  EXPECT_EQ(v[1], -0.5f);
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_EQ(v[3], 0.5f);
  EXPECT_EQ(v[64], -2.0f); // code 0 in the second block: its own scale
  EXPECT_EQ(v[127], 4.0f);
  EXPECT_EQ(row_bytes(GgmlType::Q2_0_G64, 128), 36u);
  EXPECT_EQ(traits_of(GgmlType::Q2_0_G64).file_id, 42u); // stored as mainline's id
}

TEST(Encodings, Ptq1DigitsFollowTheThreeRuns) {
  // Byte 181 holds the digits 2, 0, 1, 0, 0: v = 2 * 81 + 1 * 9 = 171 and
  // ceil(171 * 256 / 243) = 181.
  BlockPTQ1_0 b{};
  b.d = kTwo;
  // 128 holds five 1 digits (v = 121, ceil(121 * 256 / 243) = 128): value 0.
  std::memset(b.qs, 128, sizeof b.qs);
  b.qs[3] = 181;      // run 1: elements 3, 19, 35, 51, 67
  b.qs[16 + 5] = 181; // run 2: elements 85, 93, 101, 109, 117
  b.qh[1] = 181;      // run 3: elements 121, 123, 125, 127
  const auto v = decode(GgmlType::PTQ1_0, b, 128);
  EXPECT_EQ(v[3], 2.0f);   // digit 0 = 2
  EXPECT_EQ(v[19], -2.0f); // digit 1 = 0
  EXPECT_EQ(v[35], 0.0f);  // digit 2 = 1
  EXPECT_EQ(v[51], -2.0f);
  EXPECT_EQ(v[85], 2.0f);
  EXPECT_EQ(v[93], -2.0f);
  EXPECT_EQ(v[101], 0.0f);
  EXPECT_EQ(v[121], 2.0f);
  EXPECT_EQ(v[123], -2.0f);
  EXPECT_EQ(v[125], 0.0f);
  EXPECT_EQ(v[127], -2.0f);
}

TEST(Encodings, Tq1RunsAreThirtyTwoSixteenAndFourBytes) {
  BlockTQ1_0 b{};
  b.d = kHalf;
  std::memset(b.qs, 128, sizeof b.qs); // all digits 1: value 0
  std::memset(b.qh, 128, sizeof b.qh);
  b.qs[31] = 181;      // elements 31, 63, 95, ...
  b.qs[32 + 15] = 181; // elements 160 + 15, 160 + 31, 160 + 47
  b.qh[3] = 181;       // elements 243, 247, 251, 255
  const auto v = decode(GgmlType::TQ1_0, b, 256);
  EXPECT_EQ(v[31], 0.5f);
  EXPECT_EQ(v[63], -0.5f);
  EXPECT_EQ(v[95], 0.0f);
  EXPECT_EQ(v[175], 0.5f);
  EXPECT_EQ(v[191], -0.5f);
  EXPECT_EQ(v[207], 0.0f);
  EXPECT_EQ(v[243], 0.5f);
  EXPECT_EQ(v[247], -0.5f);
  EXPECT_EQ(v[251], 0.0f);
  EXPECT_EQ(v[255], -0.5f);
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[254], 0.0f);
}

TEST(Encodings, Tq2PlacesElementsByThirtyTwoByteRuns) {
  BlockTQ2_0 b{};
  b.d = kThree;
  std::memset(b.qs, 0x55, sizeof b.qs); // every code 1: value 0
  // Element 200: byte 32 * 1 + 200 % 32 = 40, bits 2 * ((200 % 128) / 32) = 4.
  b.qs[40] = 0x55 ^ (0b01 << 4) ^ (0b10 << 4); // code 2 at bits 4..5
  // Element 31: byte 31, bits 0..1: code 0.
  b.qs[31] = 0x54;
  const auto v = decode(GgmlType::TQ2_0, b, 256);
  EXPECT_EQ(v[200], 3.0f);
  EXPECT_EQ(v[31], -3.0f);
  EXPECT_EQ(v[199], 0.0f);
  EXPECT_EQ(v[136], 0.0f); // byte 40, bits 0..1
  EXPECT_EQ(v[232], 0.0f); // byte 40, bits 6..7
}

TEST(Encodings, Q4ZeroPointIsEight) {
  BlockQ4_0 b{};
  b.d = kHalf;
  b.qs[0] = 0xF0; // element 0: q 0 -> -8 * 0.5; element 16: q 15 -> 7 * 0.5
  b.qs[1] = 0x88; // elements 1 and 17: q 8 -> 0
  const auto v = decode(GgmlType::Q4_0, b, 32);
  EXPECT_EQ(v[0], -4.0f);
  EXPECT_EQ(v[16], 3.5f);
  EXPECT_EQ(v[1], 0.0f);
  EXPECT_EQ(v[17], 0.0f);
}

// A ternary row of 256 values with codes cycling 0, 1, 2 and one scale.
std::vector<uint8_t> q2_row(uint16_t d, int code3_at = -1) {
  std::vector<uint8_t> row(row_bytes(GgmlType::Q2_0, 256));
  for (int b = 0; b < 2; ++b) {
    BlockQ2_0 block{};
    block.d = d;
    for (int e = 0; e < 128; ++e) {
      const int code = (b * 128 + e == code3_at) ? 3 : (e % 3);
      block.codes[e / 4] = static_cast<uint8_t>(block.codes[e / 4] | (code << (2 * (e % 4))));
    }
    std::memcpy(row.data() + b * sizeof block, &block, sizeof block);
  }
  return row;
}

TEST(Conversions, EveryTernaryEncodingKeepsTheValues) {
  const std::vector<uint8_t> src = q2_row(kHalf);
  std::vector<float> want(256);
  dequantize_row(GgmlType::Q2_0, src.data(), want.data(), 256);
  for (GgmlType to : {GgmlType::PQ2_0, GgmlType::PTQ1_0, GgmlType::TQ1_0, GgmlType::TQ2_0,
                      GgmlType::Q2_0_G64, GgmlType::Q8_0}) {
    std::vector<uint8_t> mid(row_bytes(to, 256));
    convert_row(GgmlType::Q2_0, to, src.data(), mid.data(), 256);
    std::vector<float> got(256);
    dequantize_row(to, mid.data(), got.data(), 256);
    EXPECT_EQ(got, want) << type_name(static_cast<uint32_t>(to));
    std::vector<uint8_t> back(src.size());
    if (to != GgmlType::Q8_0) {
      convert_row(to, GgmlType::Q2_0, mid.data(), back.data(), 256);
      EXPECT_EQ(back, src) << type_name(static_cast<uint32_t>(to)) << " back to q2_0";
    }
  }
}

TEST(Conversions, TwoScalesInOneTargetBlockAreRefusedNamingTheBlock) {
  BlockQ2_0G64 blocks[4] = {};
  for (auto &b : blocks) {
    b.d = kHalf;
    std::memset(b.codes, 0x55, sizeof b.codes);
  }
  blocks[3].d = kTwo; // block 1 of the 128-wide target holds 0.5 and 2
  std::vector<uint8_t> out(row_bytes(GgmlType::Q2_0, 256));
  const std::string e =
      error_of([&] { convert_row(GgmlType::Q2_0_G64, GgmlType::Q2_0, blocks, out.data(), 256); });
  EXPECT_THAT(e, HasSubstr("block 1 (elements 128..255)"));
  EXPECT_THAT(e, HasSubstr("two scales"));
  // Group 64 takes every ternary encoding.
  std::vector<uint8_t> g64(row_bytes(GgmlType::Q2_0_G64, 256));
  EXPECT_EQ(error_of([&] {
              convert_row(GgmlType::Q2_0_G64, GgmlType::Q2_0_G64, blocks, g64.data(), 256);
            }),
            "");
}

TEST(Conversions, CodeThreeHasNoBaseThreeDigit) {
  const std::vector<uint8_t> src = q2_row(kHalf, /*code3_at=*/130);
  std::vector<uint8_t> out(row_bytes(GgmlType::PTQ1_0, 256));
  const std::string e =
      error_of([&] { convert_row(GgmlType::Q2_0, GgmlType::PTQ1_0, src.data(), out.data(), 256); });
  EXPECT_THAT(e, HasSubstr("block 1"));
  EXPECT_THAT(e, HasSubstr("2 * d at element 130"));
  // ... but a 2-bit layout keeps it (+2d, as llama.cpp reads code 3).
  std::vector<uint8_t> g64(row_bytes(GgmlType::Q2_0_G64, 256));
  convert_row(GgmlType::Q2_0, GgmlType::Q2_0_G64, src.data(), g64.data(), 256);
  std::vector<float> v(256);
  dequantize_row(GgmlType::Q2_0_G64, g64.data(), v.data(), 256);
  EXPECT_EQ(v[130], 1.0f);
}

TEST(Conversions, F16BonsaiWeightsQuantizeWithoutLoss) {
  // +-0.5 and 0 in every group: exact as ternary, and as Q1_0 without the zeros.
  std::vector<uint16_t> f16(256);
  for (int i = 0; i < 256; ++i)
    f16[i] = (i % 3 == 0) ? 0x3800 : (i % 3 == 1 ? 0xB800 : 0x0000);
  std::vector<uint8_t> tq2(row_bytes(GgmlType::TQ2_0, 256));
  convert_row(GgmlType::F16, GgmlType::TQ2_0, f16.data(), tq2.data(), 256);
  std::vector<float> v(256);
  dequantize_row(GgmlType::TQ2_0, tq2.data(), v.data(), 256);
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(v[i], fp16_to_f32(f16[i])) << i;
  std::vector<uint8_t> q1(row_bytes(GgmlType::Q1_0, 256));
  EXPECT_THAT(
      error_of([&] { convert_row(GgmlType::F16, GgmlType::Q1_0, f16.data(), q1.data(), 256); }),
      HasSubstr("block 0 (elements 0..127) holds 0 * d at element 2"));
  f16[200] = 0x3555; // 0.333...: not -d, 0 or d of its block
  EXPECT_THAT(
      error_of([&] { convert_row(GgmlType::F16, GgmlType::TQ2_0, f16.data(), tq2.data(), 256); }),
      HasSubstr("block 0 (elements 0..255) holds 0.333"));
}

TEST(Conversions, UploadCandidatesEndInAnExactComputeForm) {
  using V = std::vector<GgmlType>;
  EXPECT_EQ(upload_candidates(GgmlType::PTQ1_0),
            (V{GgmlType::PTQ1_0, GgmlType::Q2_0, GgmlType::Q8_0}));
  EXPECT_EQ(upload_candidates(GgmlType::Q2_0_G64), (V{GgmlType::Q2_0_G64, GgmlType::Q8_0}));
  EXPECT_EQ(upload_candidates(GgmlType::Q4_0), (V{GgmlType::Q4_0, GgmlType::Q8_0}));
  EXPECT_EQ(upload_candidates(GgmlType::Q1_0), (V{GgmlType::Q1_0}));
  for (GgmlType from : {GgmlType::PTQ1_0, GgmlType::TQ1_0, GgmlType::TQ2_0, GgmlType::PQ2_0,
                        GgmlType::Q2_0_G64, GgmlType::Q4_0})
    for (GgmlType to : upload_candidates(from))
      EXPECT_TRUE(can_convert(from, to));
}

} // namespace
} // namespace bonsai
