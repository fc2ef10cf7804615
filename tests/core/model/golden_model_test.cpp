// The golden models (tests/data/README.md: hidden 512, 4 layers, 4/2 heads of
// dim 128, FFN 1536, vocabulary 2048) load with the stated hyper-parameters.
#include <string>

#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"

namespace {

using bonsai::GgmlType;
using bonsai::ModelSpec;
using bonsai::gguf::File;

File open_golden(const std::string &name) {
  return File::open(std::string(BONSAI_TEST_DATA_DIR) + "/" + name);
}

void expect_golden_hparams(const bonsai::Qwen3Hparams &h) {
  EXPECT_EQ(h.n_embd, 512);
  EXPECT_EQ(h.n_layer, 4);
  EXPECT_EQ(h.n_head, 4);
  EXPECT_EQ(h.n_head_kv, 2);
  EXPECT_EQ(h.head_dim, 128);
  EXPECT_EQ(h.n_ff, 1536);
  EXPECT_EQ(h.n_vocab, 2048);
  EXPECT_EQ(h.n_ctx_train, 4096);
  EXPECT_FLOAT_EQ(h.rope.freq_base, 1e6f);
  EXPECT_FLOAT_EQ(h.rms_eps, 1e-6f);
}

// Per layer: q 512x512, k and v 512x256, o 512x512, gate/up/down 512x1536,
// norms 512 + 128 + 128 + 512.
constexpr int64_t kLayerParams = 512 * 512 * 2 + 512 * 256 * 2 + 512 * 1536 * 3 + 1280;
constexpr int64_t kEmbdParams = 512 * 2048;

TEST(ModelSpecGolden, TinyQ1IsUntied) {
  const File f = open_golden("tiny-q1.gguf");
  const ModelSpec spec = ModelSpec::from_gguf(f);
  expect_golden_hparams(spec.hparams);
  EXPECT_FALSE(spec.tied());
  ASSERT_TRUE(spec.output.has_value());
  EXPECT_EQ(spec.lm_head().name, "output.weight");
  EXPECT_EQ(spec.lm_head().type, GgmlType::Q1_0);
  ASSERT_EQ(spec.layers.size(), 4u);

  const bonsai::TensorView &down = spec.layers[2].ffn_down;
  EXPECT_EQ(down.name, "blk.2.ffn_down.weight");
  EXPECT_EQ(down.type, GgmlType::Q1_0);
  EXPECT_EQ(down.cols(), 1536);
  EXPECT_EQ(down.rows(), 512);
  EXPECT_EQ(down.nbytes, 512u * 12 * 18);
  EXPECT_EQ(down.data, f.find_tensor("blk.2.ffn_down.weight")->data);
  EXPECT_EQ(spec.layers[0].attn_k.rows(), 256);
  EXPECT_EQ(spec.layers[3].attn_q_norm.type, GgmlType::F32);
  EXPECT_EQ(spec.layers[3].attn_q_norm.cols(), 128);
  EXPECT_EQ(spec.output_norm.type, GgmlType::F32);

  EXPECT_EQ(spec.n_params(), 2 * kEmbdParams + 4 * kLayerParams + 512);
  // Q1_0: 18 bytes per 128 weights; norms are f32.
  const int64_t norm_params = 4 * 1280 + 512;
  const int64_t q1_params = spec.n_params() - norm_params;
  EXPECT_EQ(spec.weight_bytes(), static_cast<size_t>(q1_params / 128 * 18 + norm_params * 4));
}

TEST(ModelSpecGolden, TinyQ1TiedUsesTheEmbeddingAsHead) {
  const File f = open_golden("tiny-q1-tied.gguf");
  const ModelSpec spec = ModelSpec::from_gguf(f);
  expect_golden_hparams(spec.hparams);
  EXPECT_TRUE(spec.tied());
  EXPECT_EQ(spec.lm_head().name, "token_embd.weight");
  EXPECT_EQ(spec.lm_head().data, spec.token_embd.data);
  EXPECT_EQ(spec.n_params(), kEmbdParams + 4 * kLayerParams + 512);
}

TEST(ModelSpecGolden, TinyQ2IsTernary) {
  const File f = open_golden("tiny-q2.gguf");
  const ModelSpec spec = ModelSpec::from_gguf(f);
  expect_golden_hparams(spec.hparams);
  EXPECT_FALSE(spec.tied());
  EXPECT_EQ(spec.token_embd.type, GgmlType::Q2_0);
  EXPECT_EQ(spec.lm_head().type, GgmlType::Q2_0);
  for (const auto &layer : spec.layers) {
    EXPECT_EQ(layer.attn_q.type, GgmlType::Q2_0);
    EXPECT_EQ(layer.ffn_gate.type, GgmlType::Q2_0);
    EXPECT_EQ(layer.ffn_norm.type, GgmlType::F32);
  }
}

TEST(ModelSpecGolden, VocabularyOnlyFileIsNotAModel) {
  const File f = open_golden("qwen3-vocab.gguf");
  try {
    ModelSpec::from_gguf(f);
    FAIL() << "a file without tensors loaded as a model";
  } catch (const bonsai::Error &e) {
    EXPECT_NE(std::string(e.what()).find("missing tensor 'token_embd.weight'"), std::string::npos)
        << e.what();
  }
}

} // namespace
