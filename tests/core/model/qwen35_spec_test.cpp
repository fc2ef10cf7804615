// ModelSpec on qwen35 files: the tiny golden models load with the layer kinds
// and shapes their keys say, and a copy with one defect (a missing key, a
// missing tensor, a shape that disagrees with the keys) gets one error that
// names it.
#include <functional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"

namespace {

using bonsai::Architecture;
using bonsai::ModelSpec;
using bonsai::gguf::File;
using ::testing::HasSubstr;

const std::string kQ1 = std::string(BONSAI_TEST_DATA_DIR) + "/tiny-q35-q1.gguf";

TEST(Qwen35Spec, TinyModelLoadsWithItsLayerKinds) {
  const File file = File::open(kQ1);
  const ModelSpec spec = ModelSpec::from_gguf(file);
  const auto &h = spec.hparams;
  EXPECT_EQ(spec.arch(), Architecture::qwen35);
  EXPECT_EQ(h.n_layer, 4); // block_count 5 less one MTP layer
  ASSERT_TRUE(h.hybrid.has_value());
  EXPECT_EQ(h.hybrid->n_nextn, 1);
  EXPECT_EQ(h.hybrid->n_rot, 32);
  EXPECT_EQ(h.hybrid->delta_net.conv_dim(), 2 * 2 * 64 + 4 * 64);
  EXPECT_EQ(h.hybrid->recurrent, (std::vector<bool>{true, true, true, false}));
  ASSERT_EQ(spec.layers.size(), 4u);
  EXPECT_TRUE(spec.layers[0].recurrent());
  EXPECT_EQ(spec.layers[0].delta_net->conv.cols(), 4);
  EXPECT_EQ(spec.layers[0].attn_q.data, nullptr);
  EXPECT_FALSE(spec.layers[3].recurrent());
  EXPECT_EQ(spec.layers[3].attn_q.rows(), 2 * 4 * 128); // query and gate
  EXPECT_EQ(spec.layers[3].ffn_norm.name, "blk.3.post_attention_norm.weight");
  EXPECT_FALSE(spec.tied());
  // Embedding, 3 x (norm + 9 DeltaNet + 4 MLP), 1 x (norm + 6 + 4), final norm, head;
  // the MTP layer's tensors are not part of the model.
  EXPECT_EQ(spec.all_tensors().size(), 1u + 3 * 14 + 11 + 2);
}

// Sections [11, 11, 10, 0] cover all 16 pairs of 32 rotary dims: plain NeoX
// rates base^(-2i/32); no pair of a text token keeps a 0 angle.
TEST(Qwen35Spec, RopeRatesCoverTheRotaryDimsOnly) {
  const File file = File::open(kQ1);
  const auto rates = bonsai::attention_rope_rates(ModelSpec::from_gguf(file).hparams);
  ASSERT_EQ(rates.size(), 16u);
  for (size_t i = 0; i < rates.size(); ++i)
    EXPECT_NEAR(rates[i], std::pow(1e7, -2.0 * static_cast<double>(i) / 32.0), 1e-15);
}

// A copy of tiny-q35-q1 with `edit` applied to the writer's input.
struct Edit {
  enum Kind { skip_key, skip_tensor, reshape_tensor } kind;
  std::string name; // the key or tensor; a reshaped one gets its first dimension doubled
};

std::string load_error(const Edit &edit) {
  const File source = File::open(kQ1);
  bonsai::gguf::Writer w;
  for (const auto &[key, value] : source.metadata())
    if (!(edit.kind == Edit::skip_key && key == edit.name))
      w.set(key, value);
  for (const auto &t : source.tensors()) {
    if (edit.kind == Edit::skip_tensor && t.name == edit.name)
      continue;
    if (edit.kind == Edit::reshape_tensor && t.name == edit.name) {
      std::vector<int64_t> dims = t.dims;
      dims[0] *= 2;
      std::vector<uint8_t> bytes(t.nbytes * 2, 0);
      w.add_tensor(t.name, t.type(), dims, std::move(bytes));
    } else {
      w.add_tensor(t.name, t.type(), t.dims, std::span<const uint8_t>(t.data, t.nbytes));
    }
  }
  const auto image = w.serialize();
  const File f = File::parse(image, "edited.gguf");
  try {
    ModelSpec::from_gguf(f);
  } catch (const bonsai::Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "the edited model loaded";
  return "";
}

TEST(Qwen35Spec, MissingKeyIsNamed) {
  EXPECT_THAT(load_error({Edit::skip_key, "qwen35.ssm.state_size"}),
              HasSubstr("qwen35.ssm.state_size"));
  EXPECT_THAT(load_error({Edit::skip_key, "qwen35.rope.dimension_sections"}),
              HasSubstr("missing key qwen35.rope.dimension_sections"));
}

TEST(Qwen35Spec, MissingTensorIsNamed) {
  EXPECT_THAT(load_error({Edit::skip_tensor, "blk.1.ssm_conv1d.weight"}),
              HasSubstr("missing tensor 'blk.1.ssm_conv1d.weight'"));
  EXPECT_THAT(load_error({Edit::skip_tensor, "blk.3.attn_q.weight"}),
              HasSubstr("missing tensor 'blk.3.attn_q.weight' (expected shape [512, 1024]"));
}

TEST(Qwen35Spec, ShapeThatDisagreesWithTheKeysIsNamed) {
  EXPECT_THAT(load_error({Edit::reshape_tensor, "blk.0.ssm_conv1d.weight"}),
              HasSubstr("'blk.0.ssm_conv1d.weight' has shape [8, 512], expected [4, 512] "
                        "[conv_kernel, conv_dim]"));
  EXPECT_THAT(load_error({Edit::reshape_tensor, "blk.2.ssm_norm.weight"}),
              HasSubstr("expected [64] [state_size]"));
}

TEST(Qwen35Spec, InnerSizeMustMatchTheHeads) {
  const File source = File::open(kQ1);
  bonsai::gguf::Writer w;
  for (const auto &[key, value] : source.metadata())
    w.set(key, key == "qwen35.ssm.inner_size" ? bonsai::gguf::Value::u32(300) : value);
  for (const auto &t : source.tensors())
    w.add_tensor(t.name, t.type(), t.dims, std::span<const uint8_t>(t.data, t.nbytes));
  const auto image = w.serialize();
  const File f = File::parse(image, "edited.gguf");
  EXPECT_THROW(
      {
        try {
          ModelSpec::from_gguf(f);
        } catch (const bonsai::Error &e) {
          EXPECT_THAT(e.what(), HasSubstr("ssm.inner_size 300 is not time_step_rank 4 x "
                                          "state_size 64"));
          throw;
        }
      },
      bonsai::Error);
}

} // namespace
