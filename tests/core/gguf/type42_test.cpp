// ggml type 42 has two layouts in the wild (PrismML: 128 weights in 34 bytes;
// mainline llama.cpp: 64 in 18). The reader decides from each tensor's room
// in the file, never by guessing; these are the regression tests.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"

namespace {

using bonsai::GgmlType;
using bonsai::gguf::File;
using bonsai::gguf::Writer;
using ::testing::HasSubstr;

std::string parse_error(const std::vector<uint8_t> &image) {
  try {
    File::parse(image, "crafted.gguf");
  } catch (const bonsai::Error &e) {
    return e.what();
  }
  return "";
}

// A 512 x 4 tensor of `type` filled with code-1 bytes (values 0).
void add_matrix(Writer &w, const std::string &name, GgmlType type) {
  w.add_tensor(name, type, {512, 4}, std::vector<uint8_t>(bonsai::row_bytes(type, 512) * 4, 0x55));
}

// Rewrites the stored type id of tensor `name` in a serialized image.
void patch_type_id(std::vector<uint8_t> &image, const std::string &name, uint32_t id) {
  const auto at = std::search(image.begin(), image.end(), name.begin(), name.end());
  ASSERT_NE(at, image.end());
  size_t pos = static_cast<size_t>(at - image.begin()) + name.size();
  uint32_t n_dims = 0;
  std::memcpy(&n_dims, image.data() + pos, 4);
  pos += 4 + 8 * n_dims;
  std::memcpy(image.data() + pos, &id, 4);
}

TEST(Type42, MainlineLayoutIsReadAsSixtyFourPerBlock) {
  Writer w;
  add_matrix(w, "a", GgmlType::Q2_0_G64);
  add_matrix(w, "b", GgmlType::Q2_0_G64);
  const File f = File::parse(w.serialize(), "g64.gguf");
  for (const char *name : {"a", "b"}) {
    const auto *t = f.find_tensor(name);
    EXPECT_EQ(t->type_id, 42u); // stored under mainline's id
    EXPECT_EQ(t->type(), GgmlType::Q2_0_G64);
    EXPECT_EQ(t->nbytes, 4u * 8 * 18);
  }
}

TEST(Type42, PrismLayoutIsReadAsOneHundredTwentyEightPerBlock) {
  Writer w;
  add_matrix(w, "a", GgmlType::Q2_0);
  const File f = File::parse(w.serialize(), "g128.gguf");
  EXPECT_EQ(f.find_tensor("a")->type(), GgmlType::Q2_0);
  EXPECT_EQ(f.find_tensor("a")->nbytes, 4u * 4 * 34);
}

TEST(Type42, GoldenFilesOfBothLayouts) {
  const File g64 = File::open(std::string(BONSAI_TEST_DATA_DIR) + "/tiny-q2g64.gguf");
  const File g128 = File::open(std::string(BONSAI_TEST_DATA_DIR) + "/tiny-q2.gguf");
  int n42 = 0;
  for (const auto &t : g64.tensors())
    if (t.type_id == 42) {
      EXPECT_EQ(t.type(), GgmlType::Q2_0_G64) << t.name;
      ++n42;
    }
  EXPECT_EQ(n42, 4 * 7 + 2); // every matrix, the embedding and the head
  for (const auto &t : g128.tensors()) {
    if (t.type_id == 42) {
      EXPECT_EQ(t.type(), GgmlType::Q2_0) << t.name;
    }
  }
}

TEST(Type42, RoomThatFitsNeitherLayoutIsAnError) {
  Writer w;
  add_matrix(w, "a", GgmlType::F32); // 8,192 bytes: Q2_0 would take 544, mainline 576
  add_matrix(w, "b", GgmlType::F32);
  std::vector<uint8_t> image = w.serialize();
  patch_type_id(image, "a", 42);
  const std::string e = parse_error(image);
  EXPECT_THAT(e, HasSubstr("tensor 'a' has type 42 (Q2_0) but its 8192 bytes of room fit neither "
                           "layout: 128 per block (PrismML) takes 544 bytes, 64 per block "
                           "(mainline llama.cpp) 576"));
}

TEST(Type42, AFileMixingTheLayoutsIsAnError) {
  Writer w;
  add_matrix(w, "a", GgmlType::Q2_0);
  add_matrix(w, "b", GgmlType::Q2_0_G64);
  EXPECT_THAT(parse_error(w.serialize()),
              HasSubstr("'a' is 128 per block (PrismML), 'b' 64 per block (mainline llama.cpp)"));
}

TEST(Type42, ATruncatedMainlineFileIsAnError) {
  Writer w;
  add_matrix(w, "a", GgmlType::Q2_0_G64);
  std::vector<uint8_t> image = w.serialize();
  image.resize(image.size() - 40); // cuts into the last (only) tensor
  EXPECT_THAT(parse_error(image), HasSubstr("fit neither layout"));
}

} // namespace
