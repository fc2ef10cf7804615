// Catalogue rows "the GGUF structure" (docs/errors.md, section 2): each file
// is assembled byte by byte, then opened three ways that must agree: the
// `bonsai run` program (message, exit code 1), Engine::open (ModelError) and
// gguf::File::open (bonsai::Error).
#include <functional>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/engine.hpp"
#include "errors_support.hpp"

namespace bonsai::errors_test {
namespace {

constexpr uint32_t kString = 8, kArray = 9, kU32 = 4, kU64 = 10;
constexpr uint32_t kF32 = 0, kQ1_0 = 41;

struct Row {
  const char *name;
  std::function<std::vector<uint8_t>()> bytes;
  const char *message; // "MODEL" stands for the file's path
};

// Section boundaries of tests/data/tiny-q1.gguf (v3, 22 metadata entries, 47
// tensors, alignment 32), found by walking the file with an independent
// script: header 0..24, metadata ..57395, tensor table ..60119, data from
// 60128 to 2147040.
constexpr size_t kTinyMetadataEnd = 57395, kTinyTableEnd = 60119, kTinyDataStart = 60128,
                 kTinySize = 2147040;

std::vector<uint8_t> tiny_cut(size_t size) {
  std::vector<uint8_t> bytes = read_bytes(data_file("tiny-q1.gguf"));
  EXPECT_EQ(bytes.size(), kTinySize);
  bytes.resize(size);
  return bytes;
}

// One f32 tensor 'w' [8] at `offset` with `data_bytes` after the table.
std::vector<uint8_t> one_tensor(uint64_t offset, size_t data_bytes, uint32_t type = kF32,
                                std::vector<uint64_t> dims = {8}) {
  Bytes b;
  b.header(3, 1, 0).tensor("w", std::move(dims), type, offset).pad_to(32).zeros(data_bytes);
  return b.data;
}

const Row kRows[] = {
    {"BadMagic", [] { return Bytes().raw("GGML").u32(3).u64(0).u64(0).data; },
     "MODEL: bad magic (expected 'GGUF' = 47 47 55 46, found 47 47 4d 4c): not a GGUF file"},
    {"UnsupportedVersion", [] { return Bytes().header(1, 0, 0).data; },
     "MODEL: unsupported GGUF version 1: only versions 2 and 3 are supported"},
    {"BigEndianVersion",
     [] { return Bytes().raw("GGUF").raw(std::string("\0\0\0\3", 4)).u64(0).u64(0).data; },
     "MODEL: unsupported GGUF version 50331648 (a big-endian file?): only versions 2 and 3 are "
     "supported"},
    {"TruncatedInMagic", [] { return Bytes().raw("GGU").data; },
     "MODEL: truncated file: the magic needs 4 bytes at offset 0, but the file ends at 3"},
    {"TruncatedInHeader", [] { return tiny_cut(16); },
     "MODEL: truncated file: the metadata count needs 8 bytes at offset 16, but the file ends at "
     "16"},
    {"TruncatedAfterHeader", [] { return tiny_cut(24); },
     "MODEL: metadata count 22 is more than the rest of the file can hold (0 bytes left)"},
    {"TruncatedInMetadata", [] { return tiny_cut(1000); },
     "MODEL: array length 2048 of string in metadata key 'tokenizer.ggml.tokens' runs past the end "
     "of the file (needs at least 16384 bytes at offset 684, 316 bytes left)"},
    {"TruncatedAfterMetadata", [] { return tiny_cut(kTinyMetadataEnd); },
     "MODEL: tensor count 47 is more than the rest of the file can hold (0 bytes left)"},
    {"TruncatedInTensorTable", [] { return tiny_cut(kTinyTableEnd - 10); },
     "MODEL: truncated file: the type of tensor 'output.weight' needs 4 bytes at offset 60107, but "
     "the file ends at 60109"},
    {"TruncatedAfterTensorTable", [] { return tiny_cut(kTinyDataStart); },
     "MODEL: tensor 'token_embd.weight' data (offset 0, 147456 bytes) lies outside the data "
     "section (0 bytes from offset 60128): truncated file or bad offset"},
    {"TruncatedInData", [] { return tiny_cut(kTinySize - 1); },
     "MODEL: tensor 'output.weight' data (offset 1939456, 147456 bytes) lies outside the data "
     "section (2086911 bytes from offset 60128): truncated file or bad offset"},
    {"KeyLengthPastEnd", [] { return Bytes().header(3, 0, 1).u64(1000).raw("abcdefgh").data; },
     "MODEL: string length 1000 in the key of metadata entry #0 runs past the end of the file "
     "(offset 32, 8 bytes left)"},
    {"StringValuePastEnd",
     [] { return Bytes().header(3, 0, 1).str("name").u32(kString).u64(uint64_t{1} << 40).data; },
     "MODEL: string length 1099511627776 in metadata key 'name' runs past the end of the file "
     "(offset 48, 0 bytes left)"},
    {"ArrayLengthPastEnd",
     [] { return Bytes().header(3, 0, 1).str("arr").u32(kArray).u32(kU32).u64(1000).u64(0).data; },
     "MODEL: array length 1000 of uint32 in metadata key 'arr' runs past the end of the file "
     "(needs at least 4000 bytes at offset 51, 8 bytes left)"},
    {"ArrayElementCountOverflow",
     [] {
       return Bytes().header(3, 0, 1).str("arr").u32(kArray).u32(kU64).u64(uint64_t{1} << 62).data;
     },
     "MODEL: array length 4611686018427387904 x element size 8 overflows 64 bits in metadata key "
     "'arr'"},
    {"MetadataCountPastEnd", [] { return Bytes().header(3, 0, uint64_t{1} << 40).data; },
     "MODEL: metadata count 1099511627776 is more than the rest of the file can hold (0 bytes "
     "left)"},
    {"UnknownValueType", [] { return Bytes().header(3, 0, 1).str("k").u32(13).u32(0).data; },
     "MODEL: unknown metadata value type 13 for metadata key 'k'"},
    {"TensorElementCountOverflow",
     [] {
       return one_tensor(0, 0, kF32, {uint64_t{1} << 32, uint64_t{1} << 32});
     },
     "MODEL: tensor 'w' element count (dims [4294967296, 4294967296]) overflows 64 bits"},
    {"TensorByteSizeOverflow", [] { return one_tensor(0, 0, kF32, {uint64_t{1} << 62}); },
     "MODEL: tensor 'w' byte size (dims [4611686018427387904]) overflows 64 bits"},
    {"TensorDataOutOfBounds", [] { return one_tensor(64, 32); },
     "MODEL: tensor 'w' data (offset 64, 32 bytes) lies outside the data section (32 bytes from "
     "offset 64): truncated file or bad offset"},
    {"TensorDataMisaligned", [] { return one_tensor(16, 64); },
     "MODEL: tensor 'w' data offset 16 is not a multiple of the alignment 32"},
    {"UnknownTensorType", [] { return one_tensor(0, 32, 99); },
     "MODEL: tensor 'w' has unknown type id 99 (known: 0 f32, 1 f16, 2 q4_0, 8 q8_0, 30 bf16, 34 "
     "tq1_0, 35 tq2_0, 41 q1_0, 42 q2_0, 142 pq2_0, 143 ptq1_0)"},
    {"RowNotWholeBlocks", [] { return one_tensor(0, 32, kQ1_0, {100}); },
     "MODEL: tensor 'w' has dims[0] = 100, not a whole number of q1_0 blocks of 128"},
    {"TooManyDimensions",
     [] {
       return one_tensor(0, 32, kF32, {1, 1, 1, 1, 8});
     },
     "MODEL: tensor 'w' has 5 dimensions (must be 1 to 4)"},
};

// Failure messages name the row, not its bytes.
void PrintTo(const Row &row, std::ostream *os) {
  *os << row.name;
}

class GgufStructureErrors : public ::testing::TestWithParam<Row> {};

TEST_P(GgufStructureErrors, SameMessageFromProgramEngineAndReader) {
  const Row &row = GetParam();
  TempDir dir;
  const std::string model = dir.write("bad.gguf", row.bytes());
  const std::string message = with_path(row.message, model);

  expect_cli_error(run_bonsai({"run", "-m", model, "-p", "hi", "--backend", cpu_plugin()}), 1,
                   message);
  const Thrown engine = thrown_by([&] { (void)Engine::open(model, cpu_options()); });
  EXPECT_EQ(engine.type, "ModelError");
  EXPECT_EQ(engine.message, message);
  const Thrown reader = thrown_by([&] { (void)gguf::File::open(model); });
  EXPECT_EQ(reader.type, "Error");
  EXPECT_EQ(reader.message, message);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, GgufStructureErrors, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row> &info) { return info.param.name; });

} // namespace
} // namespace bonsai::errors_test
