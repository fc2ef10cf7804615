// Every class of malformed GGUF input gives one bonsai::Error that names the
// file and the specific problem (and never crashes).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "byte_builder.hpp"

namespace {

using bonsai::gguf::File;
using bonsai::test::ByteBuilder;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr const char *kName = "crafted.gguf";
constexpr uint32_t kF32 = 0;
constexpr uint32_t kQ1_0 = 41;

// The message of the Error that parsing `bytes` throws ("" plus a test failure
// if it parses).
std::string parse_error(const std::vector<uint8_t> &bytes) {
  try {
    File::parse(bytes, kName);
  } catch (const bonsai::Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "the crafted file was accepted";
  return "";
}

// A valid file with one f32 tensor [8] (32 data bytes), alignment 32.
ByteBuilder one_tensor_file(std::vector<uint64_t> dims = {8}, uint32_t type = kF32,
                            uint64_t offset = 0, size_t data_bytes = 32) {
  ByteBuilder b;
  b.header(3, 1, 1).kv_string("general.architecture", "test");
  b.tensor("w", std::move(dims), type, offset).pad_to(32).zeros(data_bytes);
  return b;
}

TEST(GgufReaderErrors, ValidBaselineParses) {
  const auto bytes = one_tensor_file().bytes;
  const File f = File::parse(bytes, kName);
  ASSERT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.tensors()[0].nbytes, 32u);
}

TEST(GgufReaderErrors, TruncatedHeader) {
  ByteBuilder b;
  b.raw("GGUF").u32(3).u32(0); // tensor count cut in half
  EXPECT_THAT(parse_error(b.bytes), AllOf(HasSubstr("crafted.gguf: "), HasSubstr("truncated file"),
                                          HasSubstr("the tensor count")));
}

TEST(GgufReaderErrors, EmptyImageIsTruncated) {
  EXPECT_THAT(parse_error({}), AllOf(HasSubstr("crafted.gguf: "), HasSubstr("truncated file")));
}

TEST(GgufReaderErrors, TruncatedInsideKey) {
  ByteBuilder b;
  // The first entry is whole; the second stops halfway through its key length.
  b.header(3, 0, 2).kv_string("k1", "twenty characters!!!").u32(5);
  EXPECT_THAT(parse_error(b.bytes), AllOf(HasSubstr("crafted.gguf: "), HasSubstr("truncated file"),
                                          HasSubstr("key of metadata entry #1")));
}

TEST(GgufReaderErrors, TruncatedInsideValue) {
  ByteBuilder b;
  b.header(3, 0, 1).str("answer").u32(10).u32(42); // uint64 value, only 4 bytes
  EXPECT_THAT(parse_error(b.bytes), AllOf(HasSubstr("crafted.gguf: "), HasSubstr("truncated file"),
                                          HasSubstr("metadata key 'answer'")));
}

TEST(GgufReaderErrors, TruncatedInsideTensorTable) {
  ByteBuilder b = one_tensor_file({8, 1, 1, 1});
  // Cut 3 bytes into the third dim: header (24) + kv (8+20 + 4 + 8+4) + name (8+1)
  // + n_dims (4) + two dims (16) + 3.
  b.bytes.resize(24 + 44 + 9 + 4 + 16 + 3);
  EXPECT_THAT(parse_error(b.bytes), AllOf(HasSubstr("crafted.gguf: "), HasSubstr("truncated file"),
                                          HasSubstr("dimensions of tensor 'w'")));
}

TEST(GgufReaderErrors, TruncatedData) {
  ByteBuilder b = one_tensor_file();
  b.bytes.resize(b.size() - 4);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w' data"),
                    HasSubstr("outside the data section"), HasSubstr("truncated")));
}

// Cutting a valid file anywhere must give an Error, never a crash or a pass.
TEST(GgufReaderErrors, EveryPrefixOfAValidFileIsRejected) {
  ByteBuilder b;
  b.header(3, 2, 4);
  b.kv_string("general.architecture", "test");
  b.str("list").u32(9).u32(8).u64(2).str("ab").str("cde");          // array of 2 strings
  b.str("nested").u32(9).u32(9).u64(1).u32(4).u64(2).u32(7).u32(9); // [[7, 9]] as u32
  b.str("flag").u32(7).u8(1);
  b.tensor("a", {8}, kF32, 0).tensor("b", {4, 2}, kF32, 32).pad_to(32).zeros(64);
  const File whole = File::parse(b.bytes, kName);
  ASSERT_EQ(whole.tensors().size(), 2u);
  for (size_t n = 0; n < b.size(); ++n) {
    const std::vector<uint8_t> prefix(b.bytes.begin(), b.bytes.begin() + static_cast<long>(n));
    EXPECT_THAT(parse_error(prefix), HasSubstr("crafted.gguf: ")) << "prefix of " << n << " bytes";
  }
}

TEST(GgufReaderErrors, BadMagic) {
  ByteBuilder b;
  b.raw("GGML").u32(3).u64(0).u64(0);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("bad magic"), HasSubstr("47 47 4d 4c")));
}

TEST(GgufReaderErrors, UnknownVersions) {
  for (uint32_t v : {0u, 1u, 4u}) {
    ByteBuilder b;
    b.header(v, 0, 0);
    EXPECT_THAT(parse_error(b.bytes),
                AllOf(HasSubstr("crafted.gguf: "),
                      HasSubstr("unsupported GGUF version " + std::to_string(v))));
  }
  ByteBuilder big_endian;
  big_endian.header(0x03000000u, 0, 0);
  EXPECT_THAT(parse_error(big_endian.bytes), HasSubstr("big-endian"));
}

TEST(GgufReaderErrors, KeyLengthPastEnd) {
  ByteBuilder b;
  b.header(3, 0, 1).u64(1000).raw("abc").zeros(20);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("string length 1000"),
                    HasSubstr("runs past the end of the file")));
}

TEST(GgufReaderErrors, StringValueLengthPastEnd) {
  ByteBuilder b;
  b.header(3, 0, 1).str("name").u32(8).u64(uint64_t{1} << 62).raw("xy");
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("metadata key 'name'"),
                    HasSubstr("string length 4611686018427387904"), HasSubstr("past the end")));
}

TEST(GgufReaderErrors, ArrayLengthPastEnd) {
  ByteBuilder b;
  b.header(3, 0, 1).str("ids").u32(9).u32(4).u64(1000).u32(1).u32(2);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("array length 1000 of uint32"),
                    HasSubstr("metadata key 'ids'"), HasSubstr("past the end of the file")));
}

TEST(GgufReaderErrors, HugeStringArrayCountIsRejectedBeforeAllocating) {
  ByteBuilder b;
  b.header(3, 0, 1).str("tokens").u32(9).u32(8).u64(uint64_t{1} << 58).str("a");
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("array length 288230376151711744"),
                    HasSubstr("past the end")));
}

TEST(GgufReaderErrors, ArrayCountTimesElementSizeOverflows) {
  ByteBuilder b;
  b.header(3, 0, 1).str("big").u32(9).u32(10).u64(uint64_t{1} << 62).u64(0);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("overflows 64 bits"),
                    HasSubstr("metadata key 'big'")));
}

TEST(GgufReaderErrors, DimsProductOverflows) {
  const auto bytes = one_tensor_file({uint64_t{1} << 32, uint64_t{1} << 32}).bytes;
  EXPECT_THAT(parse_error(bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w'"),
                    HasSubstr("element count"), HasSubstr("overflows 64 bits")));
}

TEST(GgufReaderErrors, DimLargerThanInt64Max) {
  const auto bytes = one_tensor_file({8, uint64_t{1} << 63}).bytes;
  EXPECT_THAT(parse_error(bytes), AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w'"),
                                        HasSubstr("larger than INT64_MAX")));
}

TEST(GgufReaderErrors, ByteSizeOverflowsEvenWhenElementCountFits) {
  // 2^62 f32 elements fit in int64, but their 2^64 bytes do not fit in 64 bits.
  const auto bytes = one_tensor_file({uint64_t{1} << 62}).bytes;
  EXPECT_THAT(parse_error(bytes), AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w'"),
                                        HasSubstr("overflows 64 bits")));
}

TEST(GgufReaderErrors, TensorDataOutsideDataSection) {
  EXPECT_THAT(parse_error(one_tensor_file({8}, kF32, 32).bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w' data (offset 32, 32 bytes)"),
                    HasSubstr("outside the data section")));
  // An offset near 2^64 must not wrap around the bounds check.
  EXPECT_THAT(parse_error(one_tensor_file({8}, kF32, ~uint64_t{31}).bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("outside the data section")));
}

TEST(GgufReaderErrors, MisalignedTensorOffset) {
  EXPECT_THAT(parse_error(one_tensor_file({4}, kF32, 4).bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w' data offset 4"),
                    HasSubstr("not a multiple of the alignment 32")));
}

TEST(GgufReaderErrors, UnknownTensorType) {
  EXPECT_THAT(parse_error(one_tensor_file({32}, 3).bytes), // 3 = q4_1, not supported here
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w' has unknown type id 3")));
}

TEST(GgufReaderErrors, DimsZeroNotWholeNumberOfBlocks) {
  EXPECT_THAT(parse_error(one_tensor_file({100, 1}, kQ1_0, 0, 64).bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w' has dims[0] = 100"),
                    HasSubstr("not a whole number of q1_0 blocks of 128")));
}

TEST(GgufReaderErrors, DuplicateMetadataKey) {
  ByteBuilder b;
  b.header(3, 0, 2).kv_u32("general.alignment", 32).kv_u32("general.alignment", 64);
  EXPECT_THAT(parse_error(b.bytes), AllOf(HasSubstr("crafted.gguf: "),
                                          HasSubstr("duplicate metadata key 'general.alignment'")));
}

TEST(GgufReaderErrors, DuplicateTensorName) {
  ByteBuilder b;
  b.header(3, 2, 0).tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).pad_to(32).zeros(64);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("duplicate tensor name 'w'")));
}

TEST(GgufReaderErrors, UnknownMetadataValueType) {
  ByteBuilder b;
  b.header(3, 0, 1).str("odd").u32(13).u64(0);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("unknown metadata value type 13"),
                    HasSubstr("metadata key 'odd'")));
}

TEST(GgufReaderErrors, UnknownArrayElementType) {
  ByteBuilder b;
  b.header(3, 0, 1).str("odd").u32(9).u32(99).u64(1).u64(0);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("unknown metadata value type 99"),
                    HasSubstr("array element type of metadata key 'odd'")));
}

// Arrays nested `levels` deep around one uint8.
ByteBuilder nested_arrays(int levels) {
  ByteBuilder b;
  b.header(3, 0, 1).str("deep").u32(9);
  for (int i = 1; i < levels; ++i)
    b.u32(9).u64(1); // element type array, one element
  b.u32(0).u64(1).u8(5);
  return b;
}

TEST(GgufReaderErrors, ArrayNestingDepthIsLimited) {
  const auto ok = nested_arrays(bonsai::gguf::kMaxArrayDepth).bytes;
  const File f = File::parse(ok, kName);
  const bonsai::gguf::Value *v = f.find("deep");
  ASSERT_NE(v, nullptr);
  for (int i = 0; i < bonsai::gguf::kMaxArrayDepth; ++i) {
    const auto &a = v->as_array("deep");
    ASSERT_EQ(a.items.size(), 1u);
    v = &a.items[0];
  }
  EXPECT_EQ(v->as_u64("deep"), 5u);

  EXPECT_THAT(parse_error(nested_arrays(bonsai::gguf::kMaxArrayDepth + 1).bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("nested more than 8 levels")));
}

TEST(GgufReaderErrors, TooManyDimensions) {
  EXPECT_THAT(parse_error(one_tensor_file({2, 2, 2, 1, 1}).bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w' has 5 dimensions")));
  EXPECT_THAT(parse_error(one_tensor_file({}).bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'w' has 0 dimensions")));
}

TEST(GgufReaderErrors, BadAlignmentValues) {
  for (uint32_t a : {0u, 48u}) {
    ByteBuilder b;
    b.header(3, 0, 1).kv_u32("general.alignment", a);
    EXPECT_THAT(parse_error(b.bytes), AllOf(HasSubstr("crafted.gguf: "),
                                            HasSubstr("general.alignment " + std::to_string(a) +
                                                      " is not a power of two")));
  }
  ByteBuilder wrong_type;
  wrong_type.header(3, 0, 1).str("general.alignment").u32(10).u64(64);
  EXPECT_THAT(parse_error(wrong_type.bytes),
              AllOf(HasSubstr("crafted.gguf: "),
                    HasSubstr("general.alignment must be a uint32, found uint64")));
}

TEST(GgufReaderErrors, CustomAlignmentMovesDataSection) {
  ByteBuilder b;
  b.header(3, 2, 1).kv_u32("general.alignment", 64);
  b.tensor("a", {8}, kF32, 0).tensor("b", {8}, kF32, 64).pad_to(64).zeros(96);
  const File f = File::parse(b.bytes, kName);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.tensors()[1].data, b.bytes.data() + f.data_offset() + 64);
  // With alignment 64, offset 32 is misaligned even though it was fine at 32.
  ByteBuilder mis;
  mis.header(3, 1, 1).kv_u32("general.alignment", 64);
  mis.tensor("a", {8}, kF32, 32).pad_to(64).zeros(128);
  EXPECT_THAT(parse_error(mis.bytes), HasSubstr("not a multiple of the alignment 64"));
}

TEST(GgufReaderErrors, MetadataCountLargerThanFile) {
  ByteBuilder b;
  b.header(3, 0, uint64_t{1} << 60).zeros(64);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("metadata count 1152921504606846976"),
                    HasSubstr("more than the rest of the file can hold")));
}

TEST(GgufReaderErrors, TensorCountLargerThanFile) {
  ByteBuilder b;
  b.header(3, 1000, 0).tensor("w", {8}, kF32, 0).zeros(64);
  EXPECT_THAT(parse_error(b.bytes),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor count 1000"),
                    HasSubstr("more than the rest of the file can hold")));
}

TEST(GgufReaderErrors, InvalidBoolByte) {
  ByteBuilder b;
  b.header(3, 0, 1).str("flag").u32(7).u8(2);
  EXPECT_THAT(parse_error(b.bytes), AllOf(HasSubstr("crafted.gguf: "),
                                          HasSubstr("invalid bool byte 2 in metadata key 'flag'")));
}

} // namespace

namespace {

// Overwrites every byte before the data section with a few hostile values.
// Each result must parse or throw bonsai::Error: no crash, no other exception
// (std::bad_alloc would mean a length was trusted before being checked).
TEST(GgufReaderErrors, SingleByteCorruptionsNeverEscapeAsOtherFailures) {
  ByteBuilder b;
  b.header(3, 2, 4);
  b.kv_u32("general.alignment", 32);
  b.str("tokens").u32(9).u32(8).u64(3).str("a").str("bc").str("def");
  b.str("nested").u32(9).u32(9).u64(1).u32(5).u64(2).u32(7).u32(9);
  b.str("eps").u32(6).f32(1e-6f);
  b.tensor("a", {8}, kF32, 0).tensor("q", {128, 1}, kQ1_0, 32);
  const size_t table_end = b.size();
  b.pad_to(32).zeros(64);
  ASSERT_NO_THROW(File::parse(b.bytes, kName));

  size_t rejected = 0;
  for (size_t pos = 0; pos < table_end; ++pos) {
    for (uint8_t value : {uint8_t{0x00}, uint8_t{0xff}, uint8_t{0x80}, uint8_t{0x7f},
                          static_cast<uint8_t>(b.bytes[pos] ^ 1)}) {
      std::vector<uint8_t> bytes = b.bytes;
      bytes[pos] = value;
      try {
        File::parse(bytes, kName);
      } catch (const bonsai::Error &e) {
        ++rejected;
        EXPECT_THAT(e.what(), HasSubstr("crafted.gguf: "));
      } catch (const std::exception &e) {
        ADD_FAILURE() << "byte " << pos << " = " << int{value} << ": " << e.what();
      }
    }
  }
  EXPECT_GT(rejected, table_end); // most corruptions of the structure are caught
}

} // namespace
