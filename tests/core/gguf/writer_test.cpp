// gguf::Writer: exact bytes against a hand-built image, round trips of every
// value type, the three ways to hand over tensor data, and input validation.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "byte_builder.hpp"

namespace {

namespace fs = std::filesystem;
using bonsai::GgmlType;
using bonsai::gguf::Array;
using bonsai::gguf::File;
using bonsai::gguf::Value;
using bonsai::gguf::ValueType;
using bonsai::gguf::Writer;
using bonsai::test::ByteBuilder;
using ::testing::HasSubstr;

std::vector<uint8_t> f32_bytes(std::vector<float> v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::string error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const bonsai::Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

// A fresh folder per test, removed afterwards.
class TempDir {
public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("bonsai-gguf-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};

TEST(GgufWriter, ExactBytesOfASmallFile) {
  Writer w;
  w.set("a", Value::u8(7));
  w.add_tensor("t", GgmlType::F32, {2}, f32_bytes({1.0f, 2.0f}));

  ByteBuilder expected;
  expected.header(3, 1, 1).str("a").u32(0).u8(7);
  expected.tensor("t", {2}, 0, 0).pad_to(32); // 24 + 14 + 33 = 71 -> 96
  expected.f32(1.0f).f32(2.0f).pad_to(32);    // 104 -> 128
  ASSERT_EQ(expected.size(), 128u);
  EXPECT_EQ(w.serialize(), expected.bytes);
}

TEST(GgufWriter, TensorsAreAlignedAndPacked) {
  Writer w;
  w.add_tensor("a", GgmlType::F32, {3}, f32_bytes({1, 2, 3})); // 12 bytes -> next at 32
  w.add_tensor("b", GgmlType::F32, {1, 2}, f32_bytes({4, 5}));
  const auto image = w.serialize();
  const File f = File::parse(image, "mem.gguf");
  EXPECT_EQ(f.tensors()[0].offset, 0u);
  EXPECT_EQ(f.tensors()[1].offset, 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  float b[2];
  std::memcpy(b, f.tensors()[1].data, sizeof b);
  EXPECT_EQ(b[0], 4.0f);
  EXPECT_EQ(b[1], 5.0f);
  // Padding between tensors is zero.
  for (size_t i = 12; i < 32; ++i)
    EXPECT_EQ(image[f.data_offset() + i], 0) << i;
}

TEST(GgufWriter, CustomAlignment) {
  Writer w;
  w.set_u32("general.alignment", 64);
  w.add_tensor("a", GgmlType::F32, {3}, f32_bytes({1, 2, 3}));
  w.add_tensor("b", GgmlType::F32, {3}, f32_bytes({4, 5, 6}));
  const auto image = w.serialize();
  const File f = File::parse(image, "mem.gguf");
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.tensors()[1].offset, 64u);
}

TEST(GgufWriter, RoundTripsEveryValueType) {
  Writer w;
  w.set("u8", Value::u8(255));
  w.set("i8", Value::i8(-128));
  w.set("u16", Value::u16(65535));
  w.set("i16", Value::i16(-32768));
  w.set_u32("u32", 4294967295u);
  w.set_i32("i32", std::numeric_limits<int32_t>::min());
  w.set_u64("u64", std::numeric_limits<uint64_t>::max());
  w.set("i64", Value::i64(std::numeric_limits<int64_t>::min()));
  w.set_f32("f32", 0.1f);
  w.set_f64("f64", -2.5e-300);
  w.set_bool("yes", true);
  w.set_bool("no", false);
  w.set_string("str", std::string("with\0nul", 8));
  w.set_string("empty", "");
  w.set("ints", Value::array(ValueType::INT32, {Value::i32(-1), Value::i32(2)}));
  w.set("none", Value::array(ValueType::FLOAT32, {}));
  w.set("nested",
        Value::array(ValueType::ARRAY,
                     {Value::array(ValueType::STRING, {Value::string("x"), Value::string("yz")}),
                      Value::array(ValueType::STRING, {})}));
  const auto image = w.serialize();
  const File f = File::parse(image, "mem.gguf");

  ASSERT_EQ(f.metadata().size(), 17u);
  EXPECT_EQ(f.metadata()[0].first, "u8"); // insertion order kept
  EXPECT_EQ(f.metadata()[16].first, "nested");
  EXPECT_EQ(f.at("u8").type, ValueType::UINT8);
  EXPECT_EQ(f.get_u64("u8"), 255u);
  EXPECT_EQ(f.at("i8").type, ValueType::INT8);
  EXPECT_EQ(f.at("i8").as_i64("i8"), -128);
  EXPECT_EQ(f.at("u16").type, ValueType::UINT16);
  EXPECT_EQ(f.get_u64("u16"), 65535u);
  EXPECT_EQ(f.at("i16").as_i64("i16"), -32768);
  EXPECT_EQ(f.at("u32").type, ValueType::UINT32);
  EXPECT_EQ(f.get_u64("u32"), 4294967295u);
  EXPECT_EQ(f.at("i32").as_i64("i32"), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(f.get_u64("u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f.at("i64").as_i64("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f.at("f32").type, ValueType::FLOAT32);
  EXPECT_EQ(f.get_f64("f32"), static_cast<double>(0.1f));
  EXPECT_EQ(f.at("f64").type, ValueType::FLOAT64);
  EXPECT_EQ(f.get_f64("f64"), -2.5e-300);
  EXPECT_TRUE(f.at("yes").as_bool("yes"));
  EXPECT_FALSE(f.at("no").as_bool("no"));
  EXPECT_EQ(f.get_string("str"), std::string("with\0nul", 8));
  EXPECT_EQ(f.get_string("empty"), "");

  const Array &ints = f.at("ints").as_array("ints");
  EXPECT_EQ(ints.element_type, ValueType::INT32);
  ASSERT_EQ(ints.items.size(), 2u);
  EXPECT_EQ(ints.items[0].as_i64("ints[0]"), -1);
  EXPECT_EQ(ints.items[1].as_i64("ints[1]"), 2);
  EXPECT_EQ(f.at("none").as_array("none").element_type, ValueType::FLOAT32);
  EXPECT_TRUE(f.at("none").as_array("none").items.empty());

  const Array &nested = f.at("nested").as_array("nested");
  EXPECT_EQ(nested.element_type, ValueType::ARRAY);
  ASSERT_EQ(nested.items.size(), 2u);
  const Array &inner = nested.items[0].as_array("inner");
  EXPECT_EQ(inner.element_type, ValueType::STRING);
  ASSERT_EQ(inner.items.size(), 2u);
  EXPECT_EQ(inner.items[1].as_string("yz"), "yz");
  EXPECT_TRUE(nested.items[1].as_array("inner 2").items.empty());
}

TEST(GgufWriter, SetReplacesInPlace) {
  Writer w;
  w.set_u32("a", 1);
  w.set_u32("b", 2);
  w.set_string("a", "now a string");
  const auto image = w.serialize();
  const File f = File::parse(image, "mem.gguf");
  ASSERT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata()[0].first, "a");
  EXPECT_EQ(f.get_string("a"), "now a string");
}

TEST(GgufReader, AcceptsVersion2) {
  ByteBuilder b;
  b.header(2, 1, 1).kv_u32("x", 9).tensor("w", {2}, 0, 0).pad_to(32).f32(3.0f).f32(4.0f);
  const File f = File::parse(b.bytes, "v2.gguf");
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.get_u64("x"), 9u);
  float w[2];
  std::memcpy(w, f.find_tensor("w")->data, sizeof w);
  EXPECT_EQ(w[1], 4.0f);
}

TEST(GgufWriter, OwnedMovedBorrowedAndFilledTensorsGiveTheSameFile) {
  const std::vector<uint8_t> data = f32_bytes({1, 2, 3, 4});
  Writer copied, moved, borrowed, filled;
  copied.add_tensor("t", GgmlType::F32, {4}, std::span<const uint8_t>(data));
  moved.add_tensor("t", GgmlType::F32, {4}, std::vector<uint8_t>(data));
  borrowed.add_tensor_borrowed("t", GgmlType::F32, {4}, data);
  filled.add_tensor_filled("t", GgmlType::F32, {4}, [&](std::span<uint8_t> dst) {
    ASSERT_EQ(dst.size(), data.size());
    std::memcpy(dst.data(), data.data(), dst.size());
  });
  const auto image = copied.serialize();
  EXPECT_EQ(moved.serialize(), image);
  EXPECT_EQ(borrowed.serialize(), image);
  EXPECT_EQ(filled.serialize(), image);
}

TEST(GgufWriter, WriteToDiskMatchesSerializeAndLeavesNoTempFile) {
  TempDir dir;
  Writer w;
  w.set_string("general.architecture", "test");
  w.add_tensor("a", GgmlType::F32, {3}, f32_bytes({1, 2, 3}));
  w.add_tensor_filled("b", GgmlType::Q1_0, {128, 2}, [](std::span<uint8_t> dst) {
    for (size_t i = 0; i < dst.size(); ++i)
      dst[i] = static_cast<uint8_t>(i);
  });
  const fs::path path = dir.path() / "out.gguf";
  w.write(path);

  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
  EXPECT_EQ(on_disk, w.serialize());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);

  const File f = File::open(path);
  EXPECT_EQ(f.path(), path.string());
  const auto *b = f.find_tensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->nbytes, 2u * 18);
  EXPECT_EQ(b->data[35], 35);
}

TEST(GgufWriter, WriteToMissingFolderFailsCleanly) {
  Writer w;
  w.set_u32("x", 1);
  EXPECT_THAT(error_of([&] { w.write("/nonexistent-bonsai-dir/out.gguf"); }),
              HasSubstr("/nonexistent-bonsai-dir/out.gguf: cannot create temp file"));
}

TEST(GgufWriter, RejectsBadTensors) {
  Writer w;
  w.add_tensor("t", GgmlType::F32, {2}, f32_bytes({1, 2}));
  EXPECT_THAT(error_of([&] {
                w.add_tensor("t", GgmlType::F32, {2}, f32_bytes({1, 2}));
              }),
              HasSubstr("tensor 't' added twice"));
  EXPECT_THAT(error_of([&] {
                w.add_tensor("u", GgmlType::F32, {3}, f32_bytes({1, 2}));
              }),
              HasSubstr("tensor 'u' needs 12 bytes, got 8"));
  EXPECT_THAT(error_of([&] { w.add_tensor("q", GgmlType::Q1_0, {100}, std::vector<uint8_t>(18)); }),
              HasSubstr("not a whole number of q1_0 blocks"));
  EXPECT_THAT(error_of([&] {
                w.add_tensor("x", static_cast<GgmlType>(3), {32}, std::vector<uint8_t>(20));
              }),
              HasSubstr("unknown type id 3"));
  EXPECT_THAT(error_of([&] {
                w.add_tensor("d", GgmlType::F32, {1, 1, 1, 1, 1}, f32_bytes({1}));
              }),
              HasSubstr("has 5 dimensions"));
}

TEST(GgufWriter, RejectsInconsistentValues) {
  Writer w;
  EXPECT_THAT(error_of([&] {
                w.set("k", Value{ValueType::UINT8, uint64_t{300}});
              }),
              HasSubstr("300 does not fit in uint8"));
  EXPECT_THAT(error_of([&] {
                w.set("k", Value{ValueType::STRING, uint64_t{1}});
              }),
              HasSubstr("wrong kind of payload"));
  EXPECT_THAT(error_of([&] {
                w.set("k", Value::array(ValueType::UINT32, {Value::u32(1), Value::string("x")}));
              }),
              HasSubstr("array element 1 is string, the array holds uint32"));
  EXPECT_THAT(error_of([&] { w.set_u32("general.alignment", 24); }),
              HasSubstr("24 is not a power of two"));
  Value deep = Value::u8(1);
  for (int i = 0; i <= bonsai::gguf::kMaxArrayDepth; ++i)
    deep = Value::array(deep.type, {deep});
  EXPECT_THAT(error_of([&] { w.set("deep", deep); }), HasSubstr("nested more than 8 levels"));
}

} // namespace
