// Crafted Qwen3 files: valid ones load, and each defect gives the expected error.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"
#include "crafted_model.hpp"

namespace {

using bonsai::GgmlType;
using bonsai::ModelSpec;
using bonsai::gguf::File;
using bonsai::gguf::Value;
using bonsai::test::CraftedModel;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string load_error(const CraftedModel &model) {
  const auto image = model.image();
  const File f = File::parse(image, "crafted.gguf");
  try {
    ModelSpec::from_gguf(f);
  } catch (const bonsai::Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "the crafted model loaded";
  return "";
}

TEST(ModelSpecCrafted, ValidUntiedAndTiedLoad) {
  for (bool tied : {false, true}) {
    const auto image = CraftedModel(tied).image();
    const File f = File::parse(image, "crafted.gguf");
    const ModelSpec spec = ModelSpec::from_gguf(f);
    EXPECT_EQ(spec.tied(), tied);
    EXPECT_EQ(spec.hparams.n_embd, 64);
    EXPECT_EQ(spec.hparams.n_layer, 2);
    EXPECT_EQ(spec.hparams.n_head, 4);
    EXPECT_EQ(spec.hparams.n_head_kv, 2);
    EXPECT_EQ(spec.hparams.head_dim, 16);
    EXPECT_EQ(spec.hparams.n_ff, 96);
    EXPECT_EQ(spec.hparams.n_vocab, 50);
    EXPECT_EQ(spec.hparams.n_ctx_train, 1024);
    EXPECT_FLOAT_EQ(spec.hparams.rope.freq_base, 10000.0f);
    EXPECT_FLOAT_EQ(spec.hparams.rms_eps, 1e-5f);
    EXPECT_EQ(spec.layers.size(), 2u);
    EXPECT_EQ(spec.all_tensors().size(), tied ? 24u : 25u);
  }
}

TEST(ModelSpecCrafted, DefaultsWhenOptionalKeysAreAbsent) {
  CraftedModel m;
  m.erase_key("qwen3.attention.key_length"); // head_dim = 64 / 4 = 16
  m.erase_key("qwen3.rope.freq_base");
  m.erase_key("qwen3.attention.layer_norm_rms_epsilon");
  const auto image = m.image();
  const File f = File::parse(image, "crafted.gguf");
  const ModelSpec spec = ModelSpec::from_gguf(f);
  EXPECT_EQ(spec.hparams.head_dim, 16);
  EXPECT_FLOAT_EQ(spec.hparams.rope.freq_base, 1e6f);
  EXPECT_FLOAT_EQ(spec.hparams.rms_eps, 1e-6f);
}

TEST(ModelSpecCrafted, HalfPrecisionNormsAreAccepted) {
  CraftedModel m;
  m.tensor("blk.0.attn_norm.weight").type = GgmlType::F16;
  m.tensor("output_norm.weight").type = GgmlType::BF16;
  const auto image = m.image();
  const File f = File::parse(image, "crafted.gguf");
  const ModelSpec spec = ModelSpec::from_gguf(f);
  EXPECT_EQ(spec.layers[0].attn_norm.type, GgmlType::F16);
  EXPECT_EQ(spec.output_norm.type, GgmlType::BF16);
}

TEST(ModelSpecCrafted, MissingTensor) {
  CraftedModel m;
  m.erase_tensor("blk.1.ffn_up.weight");
  EXPECT_THAT(load_error(m),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("missing tensor 'blk.1.ffn_up.weight'"),
                    HasSubstr("expected shape [64, 96] [n_embd, n_ff]")));
}

TEST(ModelSpecCrafted, MissingOutputNorm) {
  CraftedModel m;
  m.erase_tensor("output_norm.weight");
  EXPECT_THAT(load_error(m), HasSubstr("crafted.gguf: missing tensor 'output_norm.weight'"));
}

TEST(ModelSpecCrafted, WrongMatrixShape) {
  CraftedModel m;
  m.tensor("blk.0.attn_k.weight").dims = {32, 64}; // transposed
  EXPECT_THAT(load_error(m),
              AllOf(HasSubstr("crafted.gguf: "), HasSubstr("tensor 'blk.0.attn_k.weight'"),
                    HasSubstr("has shape [32, 64], expected [64, 32]"),
                    HasSubstr("[n_embd, n_head_kv * head_dim]")));
}

TEST(ModelSpecCrafted, WrongOutputShape) {
  CraftedModel m;
  m.tensor("output.weight").dims = {64, 49};
  EXPECT_THAT(load_error(m), AllOf(HasSubstr("tensor 'output.weight' has shape [64, 49]"),
                                   HasSubstr("expected [64, 50] [n_embd, n_vocab]")));
}

TEST(ModelSpecCrafted, WrongNormShape) {
  CraftedModel m;
  m.tensor("blk.1.attn_q_norm.weight").dims = {16, 4};
  EXPECT_THAT(load_error(m), AllOf(HasSubstr("tensor 'blk.1.attn_q_norm.weight'"),
                                   HasSubstr("has shape [16, 4], expected [16] [head_dim]")));
}

TEST(ModelSpecCrafted, QuantizedNormIsRejected) {
  CraftedModel m;
  m.tensor("blk.0.ffn_norm.weight").type = GgmlType::Q8_0;
  EXPECT_THAT(load_error(m), AllOf(HasSubstr("crafted.gguf: "),
                                   HasSubstr("norm tensor 'blk.0.ffn_norm.weight' has type q8_0"),
                                   HasSubstr("expected f32, f16 or bf16")));
}

TEST(ModelSpecCrafted, WrongArchitecture) {
  CraftedModel m;
  m.set(Value::string("llama"), "general.architecture");
  EXPECT_THAT(load_error(m),
              HasSubstr("crafted.gguf: unsupported architecture 'llama' (bonsai runs qwen3 and qwen35)"));
}

TEST(ModelSpecCrafted, MissingArchitecture) {
  CraftedModel m;
  m.erase_key("general.architecture");
  EXPECT_THAT(load_error(m),
              HasSubstr("crafted.gguf: missing metadata key 'general.architecture'"));
}

TEST(ModelSpecCrafted, HeadCountNotAMultipleOfKvHeads) {
  CraftedModel m;
  m.set(Value::u32(3), "qwen3.attention.head_count_kv");
  EXPECT_THAT(load_error(m),
              HasSubstr("crafted.gguf: qwen3.attention.head_count 4 is not a multiple of "
                        "qwen3.attention.head_count_kv 3"));
}

TEST(ModelSpecCrafted, ZeroKvHeads) {
  CraftedModel m;
  m.set(Value::u32(0), "qwen3.attention.head_count_kv");
  EXPECT_THAT(load_error(m),
              HasSubstr("crafted.gguf: qwen3.attention.head_count_kv 0 is out of range"));
}

TEST(ModelSpecCrafted, OddHeadDim) {
  CraftedModel m;
  m.set(Value::u32(15), "qwen3.attention.key_length");
  EXPECT_THAT(load_error(m), HasSubstr("crafted.gguf: head dim 15 is odd"));
}

TEST(ModelSpecCrafted, ValueLengthDifferentFromKeyLength) {
  CraftedModel m;
  m.set(Value::u32(8), "qwen3.attention.value_length");
  EXPECT_THAT(load_error(m), HasSubstr("value_length 8 differs from key_length 16"));
}

TEST(ModelSpecCrafted, AbsurdSizesAreRejected) {
  CraftedModel m;
  m.set(Value::u64(uint64_t{1} << 40), "qwen3.block_count");
  EXPECT_THAT(load_error(m),
              HasSubstr("crafted.gguf: qwen3.block_count 1099511627776 is out of range (1..1024)"));
  CraftedModel zero;
  zero.set(Value::u32(0), "qwen3.embedding_length");
  EXPECT_THAT(load_error(zero), HasSubstr("qwen3.embedding_length 0 is out of range"));
}

TEST(ModelSpecCrafted, MissingRequiredKey) {
  CraftedModel m;
  m.erase_key("qwen3.feed_forward_length");
  EXPECT_THAT(load_error(m),
              HasSubstr("crafted.gguf: missing metadata key 'qwen3.feed_forward_length'"));
}

TEST(ModelSpecCrafted, WrongKeyType) {
  CraftedModel m;
  m.set(Value::string("four"), "qwen3.block_count");
  EXPECT_THAT(load_error(m), HasSubstr("crafted.gguf: metadata key 'qwen3.block_count': expected "
                                       "an integer, found string"));
}

TEST(ModelSpecCrafted, BadEpsilonAndRopeBase) {
  CraftedModel m;
  m.set(Value::f32(-1e-6f), "qwen3.attention.layer_norm_rms_epsilon");
  EXPECT_THAT(load_error(m), HasSubstr("qwen3.attention.layer_norm_rms_epsilon"));
  CraftedModel r;
  r.set(Value::f32(0.0f), "qwen3.rope.freq_base");
  EXPECT_THAT(load_error(r), HasSubstr("qwen3.rope.freq_base = 0"));
}

// Positive doubles that round to 0 (or overflow) as the float the spec keeps:
// once accepted and turned into an epsilon or base of 0 (found by fuzz_model).
TEST(ModelSpecCrafted, EpsilonAndRopeBaseMustSurviveTheFloatTheyAreKeptIn) {
  CraftedModel m;
  m.set(Value::f64(1e-60), "qwen3.attention.layer_norm_rms_epsilon");
  EXPECT_THAT(load_error(m), HasSubstr("qwen3.attention.layer_norm_rms_epsilon"));
  CraftedModel r;
  r.set(Value::f64(1e-60), "qwen3.rope.freq_base");
  EXPECT_THAT(load_error(r), HasSubstr("qwen3.rope.freq_base = 0.000000: must be a positive"));
  CraftedModel f;
  f.set(Value::f64(1e60), "qwen3.rope.scaling.factor");
  EXPECT_THAT(load_error(f), HasSubstr("qwen3.rope.scaling.factor = "));
}

TEST(ModelSpecCrafted, OneDimensionalEmbedding) {
  CraftedModel m;
  m.tensor("token_embd.weight").dims = {64};
  EXPECT_THAT(load_error(m), HasSubstr("tensor 'token_embd.weight' has 1 dimensions, expected 2"));
}

} // namespace
