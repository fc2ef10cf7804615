// File::open on things that are not GGUF files: each is a clear error.
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

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
