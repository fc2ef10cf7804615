// File::open on things that are not GGUF files: each is a clear error.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"

namespace {

namespace fs = std::filesystem;
using bonsai::gguf::File;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class GgufOpen : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("bonsai-gguf-open-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(GgufOpen, MissingFile) {
  const std::string path = (dir_ / "absent.gguf").string();
  EXPECT_THAT([&] { File::open(path); },
              ThrowsMessage<bonsai::Error>(
                  AllOf(HasSubstr(path + ": cannot open"), HasSubstr("No such file"))));
}

TEST_F(GgufOpen, EmptyFile) {
  const fs::path path = dir_ / "empty.gguf";
  std::ofstream(path).close();
  EXPECT_THAT([&] { File::open(path); },
              ThrowsMessage<bonsai::Error>(HasSubstr(path.string() + ": empty file")));
}

TEST_F(GgufOpen, Directory) {
  EXPECT_THAT([&] { File::open(dir_); },
              ThrowsMessage<bonsai::Error>(HasSubstr(dir_.string() + ": is a directory")));
}

TEST_F(GgufOpen, TextFileHasBadMagic) {
  const fs::path path = dir_ / "notes.txt";
  std::ofstream(path) << "hello, this is not a model file\n";
  EXPECT_THAT([&] { File::open(path); },
              ThrowsMessage<bonsai::Error>(HasSubstr(path.string() + ": bad magic")));
}

TEST_F(GgufOpen, MovedFileKeepsItsMapping) {
  File a = File::open(std::string(BONSAI_TEST_DATA_DIR) + "/tiny-q1-tied.gguf");
  const uint8_t *data = a.find_tensor("token_embd.weight")->data;
  File b = std::move(a);
  EXPECT_EQ(b.find_tensor("token_embd.weight")->data, data);
  EXPECT_EQ(b.get_string("general.architecture"), "qwen3");
}

} // namespace

namespace {

// The mapping outlives the File through its handle: what a model loader uses
// to drop the parsed metadata but keep the tensor bytes.
TEST(GgufMappingHandle, KeepsTensorBytesValidAfterTheFileIsDestroyed) {
  const std::string path = std::string(BONSAI_TEST_DATA_DIR) + "/tiny-q1.gguf";
  std::shared_ptr<const void> handle;
  const uint8_t *data = nullptr;
  uint64_t file_offset = 0;
  size_t nbytes = 0;
  {
    const File file = File::open(path);
    const bonsai::gguf::TensorInfo *embd = file.find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    data = embd->data;
    nbytes = embd->nbytes;
    file_offset = file.data_offset() + embd->offset;
    handle = file.mapping_handle();
    ASSERT_NE(handle, nullptr);
  }
  // The same bytes, read from disk with plain I/O.
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(file_offset));
  std::vector<char> expected(nbytes);
  in.read(expected.data(), static_cast<std::streamsize>(nbytes));
  ASSERT_TRUE(in.good());
  EXPECT_EQ(0, std::memcmp(data, expected.data(), nbytes));
}

TEST(GgufMappingHandle, IsEmptyForParsedBuffersTheCallerOwns) {
  std::ifstream in(std::string(BONSAI_TEST_DATA_DIR) + "/tiny-q1.gguf", std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  const File file = File::parse(bytes, "in-memory");
  EXPECT_EQ(file.mapping_handle(), nullptr);
}

} // namespace
