// Reads the golden files (written by llama.cpp's gguf-py, see
// tests/data/README.md) and checks facts stated there and in docs/formats.md.
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bonsai/core/gguf.hpp"

namespace {

using bonsai::GgmlType;
using bonsai::gguf::File;

std::string data_path(const std::string &name) {
  return std::string(BONSAI_TEST_DATA_DIR) + "/" + name;
}

TEST(GgufGolden, TinyQ1Metadata) {
  const File f = File::open(data_path("tiny-q1.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.get_string("general.architecture"), "qwen3");
  EXPECT_EQ(f.get_u64("qwen3.block_count"), 4u);
  EXPECT_EQ(f.get_u64("qwen3.embedding_length"), 512u);
  EXPECT_EQ(f.get_u64("qwen3.attention.head_count"), 4u);
  EXPECT_EQ(f.get_u64("qwen3.attention.head_count_kv"), 2u);
  EXPECT_EQ(f.get_u64("qwen3.attention.key_length"), 128u);
  EXPECT_EQ(f.get_u64("qwen3.feed_forward_length"), 1536u);
  EXPECT_DOUBLE_EQ(f.get_f64("qwen3.rope.freq_base"), 1e6);
  EXPECT_FLOAT_EQ(static_cast<float>(f.get_f64("qwen3.attention.layer_norm_rms_epsilon")), 1e-6f);
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "qwen2");
  const auto &tokens = f.at("tokenizer.ggml.tokens").as_array("tokens");
  EXPECT_EQ(tokens.element_type, bonsai::gguf::ValueType::STRING);
  ASSERT_EQ(tokens.items.size(), 2048u);
  EXPECT_EQ(tokens.items[0].as_string("token 0"), "!");
  EXPECT_EQ(f.at("tokenizer.ggml.add_bos_token").as_bool("add_bos"), false);
}

TEST(GgufGolden, TinyQ1Tensors) {
  const File f = File::open(data_path("tiny-q1.gguf"));
  // token_embd + 4 layers x 11 + output_norm + output.
  EXPECT_EQ(f.tensors().size(), 47u);
  const auto *embd = f.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dims, (std::vector<int64_t>{512, 2048}));
  EXPECT_EQ(embd->type(), GgmlType::Q1_0);

  const auto *q = f.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type_id, 41u);
  EXPECT_EQ(q->dims, (std::vector<int64_t>{512, 512}));
  EXPECT_EQ(q->offset, 147456u); // = 2048 rows x 4 blocks x 18 bytes of token_embd
  EXPECT_EQ(q->nbytes, 512u * 4 * 18);
  EXPECT_EQ(q->data, f.bytes().data() + f.data_offset() + 147456);
  EXPECT_EQ(f.data_offset() % 32, 0u);

  const auto *k = f.find_tensor("blk.3.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->dims, (std::vector<int64_t>{512, 256}));
  const auto *norm = f.find_tensor("blk.0.attn_q_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->type(), GgmlType::F32);
  EXPECT_EQ(norm->dims, (std::vector<int64_t>{128}));
  EXPECT_NE(f.find_tensor("output.weight"), nullptr);
  EXPECT_EQ(f.find_tensor("blk.4.attn_q.weight"), nullptr);
}

TEST(GgufGolden, TiedModelHasNoOutputWeight) {
  const File f = File::open(data_path("tiny-q1-tied.gguf"));
  EXPECT_EQ(f.tensors().size(), 46u);
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
  EXPECT_NE(f.find_tensor("output_norm.weight"), nullptr);
}

TEST(GgufGolden, TinyQ2MatricesAreTernary) {
  const File f = File::open(data_path("tiny-q2.gguf"));
  int matrices = 0;
  for (const auto &t : f.tensors()) {
    if (t.dims.size() != 2)
      continue;
    ++matrices;
    EXPECT_EQ(t.type_id, 42u) << t.name;
  }
  EXPECT_EQ(matrices, 1 + 4 * 7 + 1);
  const auto *down = f.find_tensor("blk.2.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dims, (std::vector<int64_t>{1536, 512}));
  EXPECT_EQ(down->nbytes, 512u * (1536 / 128) * 34);
}

TEST(GgufGolden, Qwen3VocabularyFile) {
  const File f = File::open(data_path("qwen3-vocab.gguf"));
  EXPECT_TRUE(f.tensors().empty());
  const auto &tokens = f.at("tokenizer.ggml.tokens").as_array("tokens");
  ASSERT_EQ(tokens.items.size(), 151669u);
  EXPECT_EQ(tokens.items[0].as_string("token 0"), "!");
  const auto &merges = f.at("tokenizer.ggml.merges").as_array("merges");
  ASSERT_EQ(merges.items.size(), 151387u);
  EXPECT_EQ(merges.items[0].as_string("merge 0"), "\xC4\xA0 \xC4\xA0"); // "Ġ Ġ"
  const auto &types = f.at("tokenizer.ggml.token_type").as_array("types");
  EXPECT_EQ(types.element_type, bonsai::gguf::ValueType::INT32);
  EXPECT_EQ(types.items.size(), 151669u);
  EXPECT_EQ(f.get_u64("tokenizer.ggml.eos_token_id"), 151645u);
  EXPECT_EQ(f.get_u64("tokenizer.ggml.bos_token_id"), 151643u);
  EXPECT_NE(f.get_string("tokenizer.chat_template").find("<|im_start|>"), std::string::npos);
}

} // namespace

// Releasing the resident pages of a tensor loses nothing: its bytes read
// back as the file holds them (compared with an independent read of the
// file); a range outside the mapping and an empty handle are ignored.
TEST(GgufMapping, ReleasedPagesReadBackFromTheFile) {
  const std::string path = data_path("tiny-q1.gguf");
  const File f = File::open(path);
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> disk((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(disk.size(), f.file_size());
  const auto &tensor = f.tensors().back();
  const size_t offset = static_cast<size_t>(tensor.data - f.bytes().data());
  File::release_resident_pages(f.mapping_handle(), tensor.data, tensor.nbytes);
  File::release_resident_pages(f.mapping_handle(), f.bytes().data(), f.file_size());
  const int outside = 0;
  File::release_resident_pages(f.mapping_handle(), &outside, sizeof(outside));
  File::release_resident_pages(nullptr, tensor.data, tensor.nbytes);
  EXPECT_EQ(0, std::memcmp(tensor.data, disk.data() + offset, tensor.nbytes));
  EXPECT_EQ(0, std::memcmp(f.bytes().data(), disk.data(), disk.size()));
}
