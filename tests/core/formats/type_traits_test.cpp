// Type table and row size arithmetic.
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"

namespace bonsai {
namespace {

TEST(TypeTraits, KnownIds) {
  const auto q1 = type_traits(41);
  ASSERT_TRUE(q1.has_value());
  EXPECT_EQ(q1->type, GgmlType::Q1_0);
  EXPECT_EQ(q1->name, "q1_0");
  EXPECT_EQ(q1->block_elements, 128);
  EXPECT_EQ(q1->block_bytes, 18u);

  const auto q2 = type_traits(42);
  ASSERT_TRUE(q2.has_value());
  EXPECT_EQ(q2->block_elements, 128);
  EXPECT_EQ(q2->block_bytes, 34u);

  const auto q8 = type_traits(8);
  ASSERT_TRUE(q8.has_value());
  EXPECT_EQ(q8->block_elements, 32);
  EXPECT_EQ(q8->block_bytes, 34u);

  EXPECT_EQ(type_traits(0)->block_bytes, 4u);
  EXPECT_EQ(type_traits(1)->block_bytes, 2u);
  EXPECT_EQ(type_traits(30)->block_bytes, 2u);
}

TEST(TypeTraits, UnknownIds) {
  EXPECT_FALSE(type_traits(3).has_value()); // q4_1: not an encoding of Bonsai weights
  EXPECT_FALSE(type_traits(40).has_value());
  EXPECT_FALSE(type_traits(0xFFFFFFFFu).has_value());
  EXPECT_EQ(type_name(3), "unknown");
  // 1042 is bonsai's id for mainline Q2_0; no file stores it.
  EXPECT_TRUE(type_traits(1042).has_value());
  EXPECT_FALSE(file_type_traits(1042).has_value());
  EXPECT_EQ(file_type_traits(42)->type, GgmlType::Q2_0);
  EXPECT_THROW(traits_of(static_cast<GgmlType>(7)), Error);
}

TEST(TypeTraits, NamesBothWays) {
  EXPECT_EQ(type_name(0), "f32");
  EXPECT_EQ(type_name(1), "f16");
  EXPECT_EQ(type_name(8), "q8_0");
  EXPECT_EQ(type_name(30), "bf16");
  EXPECT_EQ(type_name(41), "q1_0");
  EXPECT_EQ(type_name(42), "q2_0");
  EXPECT_EQ(type_from_name("q2_0"), GgmlType::Q2_0);
  EXPECT_EQ(type_from_name("bf16"), GgmlType::BF16);
  EXPECT_FALSE(type_from_name("Q1_0").has_value());
  EXPECT_FALSE(type_from_name("q4_k").has_value());
}

TEST(RowBytes, EachType) {
  EXPECT_EQ(row_bytes(GgmlType::F32, 10), 40u);
  EXPECT_EQ(row_bytes(GgmlType::F16, 10), 20u);
  EXPECT_EQ(row_bytes(GgmlType::BF16, 7), 14u);
  EXPECT_EQ(row_bytes(GgmlType::Q8_0, 64), 68u);
  EXPECT_EQ(row_bytes(GgmlType::Q1_0, 256), 36u);
  EXPECT_EQ(row_bytes(GgmlType::Q1_0, 2048), 288u); // one 1.7B hidden row
  EXPECT_EQ(row_bytes(GgmlType::Q2_0, 256), 68u);
  EXPECT_EQ(row_bytes(GgmlType::Q2_0, 0), 0u);
}

TEST(RowBytes, RejectsPartialBlocks) {
  try {
    row_bytes(GgmlType::Q1_0, 100);
    FAIL() << "no error for a partial block";
  } catch (const Error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("q1_0"), std::string::npos) << what;
    EXPECT_NE(what.find("100"), std::string::npos) << what;
    EXPECT_NE(what.find("128"), std::string::npos) << what;
  }
  EXPECT_THROW(row_bytes(GgmlType::Q8_0, 33), Error);
  EXPECT_THROW(row_bytes(GgmlType::Q2_0, 129), Error);
}

TEST(RowBytes, RejectsNegativeAndOverflowingLengths) {
  EXPECT_THROW(row_bytes(GgmlType::F32, -1), Error);
  EXPECT_THROW(row_bytes(GgmlType::F32, std::numeric_limits<int64_t>::max()), Error);
  EXPECT_THROW(row_bytes(static_cast<GgmlType>(3), 32), Error);
}

TEST(RowFunctions, RejectPartialBlocks) {
  float values[130] = {};
  uint8_t bytes[64] = {};
  EXPECT_THROW(dequantize_row(GgmlType::Q1_0, bytes, values, 130), Error);
  EXPECT_THROW(quantize_row(GgmlType::Q2_0, values, bytes, 130), Error);
  EXPECT_THROW(quantize_row(static_cast<GgmlType>(99), values, bytes, 1), Error);
}

} // namespace
} // namespace bonsai
