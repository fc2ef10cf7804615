// Checked conversions of metadata values and the File's typed getters.
#include <cstdint>
#include <limits>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "byte_builder.hpp"

namespace {

using bonsai::gguf::File;
using bonsai::gguf::Value;
using bonsai::gguf::ValueType;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(GgufValue, IntegerConversionsAreChecked) {
  EXPECT_EQ(Value::i32(5).as_u64("v"), 5u);
  EXPECT_THAT([] { Value::i32(-3).as_u64("v"); },
              ThrowsMessage<bonsai::Error>(HasSubstr("v: value -3 is negative")));
  EXPECT_EQ(Value::u32(7).as_i64("v"), 7);
  EXPECT_THAT([] { Value::u64(std::numeric_limits<uint64_t>::max()).as_i64("v"); },
              ThrowsMessage<bonsai::Error>(HasSubstr("does not fit in a signed 64-bit")));
  EXPECT_EQ(Value::u16(9).as_f64("v"), 9.0);
  EXPECT_EQ(Value::i8(-9).as_f64("v"), -9.0);
  EXPECT_TRUE(Value::u8(1).is_integer());
  EXPECT_FALSE(Value::f32(1).is_integer());
  EXPECT_TRUE(Value::f64(1).is_float());
}

TEST(GgufValue, WrongKindNamesBothTypes) {
  EXPECT_THAT(
      [] { Value::u32(1).as_string("model.name"); },
      ThrowsMessage<bonsai::Error>(HasSubstr("model.name: expected a string, found uint32")));
  EXPECT_THAT([] { Value::string("x").as_u64("n"); },
              ThrowsMessage<bonsai::Error>(HasSubstr("n: expected an integer, found string")));
  EXPECT_THAT([] { Value::f32(1).as_bool("b"); },
              ThrowsMessage<bonsai::Error>(HasSubstr("b: expected a bool, found float32")));
  EXPECT_THAT([] { Value::boolean(true).as_array("a"); },
              ThrowsMessage<bonsai::Error>(HasSubstr("a: expected an array, found bool")));
  EXPECT_THAT([] { Value::string("1").as_f64("f"); },
              ThrowsMessage<bonsai::Error>(HasSubstr("f: expected a number, found string")));
}

TEST(GgufValue, TypeNames) {
  EXPECT_EQ(bonsai::gguf::value_type_name(ValueType::FLOAT64), "float64");
  EXPECT_EQ(bonsai::gguf::value_type_name(ValueType::ARRAY), "array");
  EXPECT_EQ(bonsai::gguf::value_type_name(static_cast<ValueType>(77)), "unknown");
}

TEST(GgufValue, FileGettersNameFileAndKey) {
  bonsai::test::ByteBuilder b;
  b.header(3, 0, 2).kv_u32("count", 3).kv_string("name", "bonsai");
  const File f = File::parse(b.bytes, "meta.gguf");
  EXPECT_EQ(f.get_u64("count"), 3u);
  EXPECT_EQ(f.get_f64("count"), 3.0);
  EXPECT_EQ(f.get_string("name"), "bonsai");
  EXPECT_EQ(f.find("absent"), nullptr);
  EXPECT_THAT([&] { f.at("absent"); },
              ThrowsMessage<bonsai::Error>(HasSubstr("meta.gguf: missing metadata key 'absent'")));
  EXPECT_THAT([&] { f.get_string("count"); },
              ThrowsMessage<bonsai::Error>(
                  HasSubstr("meta.gguf: metadata key 'count': expected a string, found uint32")));
  EXPECT_THAT([&] { f.get_u64("name"); },
              ThrowsMessage<bonsai::Error>(HasSubstr("meta.gguf: metadata key 'name'")));
}

} // namespace
