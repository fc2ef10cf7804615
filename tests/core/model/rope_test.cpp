// RoPE scaling against values worked out by hand from the formulas in
// tests/data/README.md (tiny-q1-yarn: head dim 128, base 1e6, YaRN factor 4
// over an original context of 1024), and the metadata keys that change the
// forward pass: honoured or refused by name.
#include <cmath>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"
#include "bonsai/core/rope.hpp"
#include "crafted_model.hpp"

namespace {

using bonsai::ModelSpec;
using bonsai::RopeScalingType;
using bonsai::RopeSettings;
using bonsai::gguf::File;
using bonsai::gguf::Value;
using bonsai::test::CraftedModel;
using ::testing::HasSubstr;

double plain(int i) {
  return std::pow(1e6, -2.0 * i / 128);
}

RopeSettings yarn4() {
  RopeSettings r;
  r.scaling = RopeScalingType::Yarn;
  r.factor = 4.0f;
  r.original_context = 1024;
  return r;
}

TEST(Rope, PlainRatesArePowersOfTheBase) {
  const auto rates = bonsai::rope_inv_freq(RopeSettings{}, 128);
  ASSERT_EQ(rates.size(), 64u);
  EXPECT_EQ(rates[0], 1.0);
  EXPECT_DOUBLE_EQ(rates[32], 1e-3); // 1e6^(-64/128)
  EXPECT_EQ(bonsai::rope_magnitude(RopeSettings{}), 1.0);
}

TEST(Rope, LinearDividesEveryRateByTheFactor) {
  RopeSettings r;
  r.scaling = RopeScalingType::Linear;
  r.factor = 2.0f;
  const auto rates = bonsai::rope_inv_freq(r, 128);
  EXPECT_DOUBLE_EQ(rates[0], 0.5);
  EXPECT_DOUBLE_EQ(rates[32], 0.5e-3);
  EXPECT_EQ(bonsai::rope_magnitude(r), 1.0);
}

TEST(Rope, YarnKeepsFastPairsInterpolatesSlowOnesAndRampsBetween) {
  // c(32) = 128 ln(1024 / (64 pi)) / (2 ln 1e6) = 7.541 -> low 7;
  // c(1) = 128 ln(1024 / (2 pi)) / (2 ln 1e6) = 23.596 -> high 24.
  const auto rates = bonsai::rope_inv_freq(yarn4(), 128);
  EXPECT_DOUBLE_EQ(rates[0], 1.0);
  EXPECT_DOUBLE_EQ(rates[7], plain(7));               // r = 1: extrapolated
  EXPECT_DOUBLE_EQ(rates[15], plain(15) * 11.0 / 17); // r = 9/17: 9/17 + (8/17) / 4
  EXPECT_DOUBLE_EQ(rates[24], plain(24) / 4);         // r = 0: interpolated
  EXPECT_DOUBLE_EQ(rates[63], plain(63) / 4);
  EXPECT_DOUBLE_EQ(bonsai::rope_magnitude(yarn4()), 1.0 + 0.1 * std::log(4.0)); // 1.1386
}

bonsai::Qwen3Hparams load(const CraftedModel &m) {
  const auto image = m.image();
  const File file = File::parse(image, "crafted.gguf");
  return ModelSpec::from_gguf(file).hparams;
}

std::string load_error(const CraftedModel &m) {
  try {
    load(m);
  } catch (const bonsai::Error &e) {
    return e.what();
  }
  return "";
}

TEST(RopeKeys, YarnMetadataIsRead) {
  CraftedModel m;
  m.set(Value::string("yarn"), "qwen3.rope.scaling.type");
  m.set(Value::f32(4.0f), "qwen3.rope.scaling.factor");
  m.set(Value::u32(256), "qwen3.rope.scaling.original_context_length");
  m.set(Value::f32(16.0f), "qwen3.rope.scaling.yarn_beta_fast");
  const RopeSettings rope = load(m).rope;
  EXPECT_EQ(rope.scaling, RopeScalingType::Yarn);
  EXPECT_EQ(rope.factor, 4.0f);
  EXPECT_EQ(rope.original_context, 256);
  EXPECT_EQ(rope.yarn_beta_fast, 16.0f);
  EXPECT_EQ(rope.yarn_beta_slow, 1.0f);
}

TEST(RopeKeys, OldLinearKeyIsLinearScaling) {
  CraftedModel m;
  m.set(Value::f32(2.0f), "qwen3.rope.scale_linear");
  const RopeSettings rope = load(m).rope;
  EXPECT_EQ(rope.scaling, RopeScalingType::Linear);
  EXPECT_EQ(rope.factor, 2.0f);
}

TEST(RopeKeys, KeysThatChangeTheMathAreRefusedByName) {
  struct Case {
    const char *key;
    Value value;
    const char *message;
  };
  const Case cases[] = {
      {"qwen3.rope.scaling.type", Value::string("longrope"),
       "qwen3.rope.scaling.type = 'longrope': unknown rope scaling"},
      {"qwen3.rope.scaling.factor", Value::f32(0.5f),
       "qwen3.rope.scaling.factor = 0.500000: a context-extension factor must be at least 1"},
      {"qwen3.rope.dimension_count", Value::u32(8),
       "qwen3.rope.dimension_count = 8: a partial rotary embedding (head dim 16)"},
      {"qwen3.rope.dimension_sections", Value::u32(1), "multi-section (M-RoPE)"},
      {"qwen3.attention.scale", Value::f32(0.5f), "qwen3.attention.scale = 0.500000: a custom"},
      {"qwen3.attention.sliding_window", Value::u32(128), "sliding-window attention"},
      {"qwen3.attention.layer_norm_epsilon", Value::f32(1e-5f), "LayerNorm instead of RMSNorm"},
      {"qwen3.final_logit_softcapping", Value::f32(30.0f), "soft-capped output logits"},
      {"qwen3.logit_scale", Value::f32(0.5f), "scaled output logits"},
      {"qwen3.expert_count", Value::u32(8), "a mixture of experts"},
      {"qwen3.rope.scaling.yarn_ext_factor", Value::f32(0.5f), "changes the YaRN ramp"},
      {"qwen3.rope.scaling.original_context_length", Value::f32(0.5f),
       "qwen3.rope.scaling.original_context_length = 0.500000: must be a number of positions"},
      {"qwen3.rope.scaling.original_context_length", Value::f64(1e30),
       "must be a number of positions in 1..1e9"},
      {"qwen3.attention.causal", Value::boolean(false), "non-causal attention"},
  };
  for (const Case &c : cases) {
    CraftedModel m;
    m.set(c.value, c.key);
    EXPECT_THAT(load_error(m), HasSubstr(c.message)) << c.key;
  }
}

TEST(RopeKeys, NeutralValuesOfRefusedKeysAreAccepted) {
  CraftedModel m;
  m.set(Value::u32(16), "qwen3.rope.dimension_count");     // the whole head
  m.set(Value::f32(0.25f), "qwen3.attention.scale");       // 1 / sqrt(16)
  m.set(Value::string("none"), "qwen3.rope.scaling.type"); // explicit "none"
  m.set(Value::boolean(true), "qwen3.attention.causal");
  EXPECT_EQ(load_error(m), "");
}

} // namespace
