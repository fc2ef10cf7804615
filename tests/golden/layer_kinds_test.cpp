// ABI 1.2 layer kinds, driven through the ABI alone on the tiny qwen35
// golden models: a plugin that binds the layered model matches the float64
// reference, and its recurrent state follows the header's rules (a step never
// ended changes nothing, a cut-back slot refuses steps until a checkpoint is
// restored, a restored or copied state continues as a fresh run does, a
// multi-sequence step equals each sequence alone). The exact kernels must
// give identical bits where the same tokens run in the same step sizes.
// Skipped for a plugin without the extension ($BONSAI_PLUGIN).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <iostream>
#include <numeric>

#include "golden.hpp"
#include "plugin_model.hpp"

namespace bonsai::test {
namespace {

constexpr int kGoldenVocab = 2048;
constexpr int kSplit = 20; // the prompt's first part, then the rest

class LayerKinds : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    golden_ = load_golden_case(BONSAI_TEST_DATA_DIR, GetParam(), kGoldenVocab);
    library_ = std::make_unique<PluginLibrary>(plugin_path_from_env());
    kinds_ = layer_kinds_extension(api());
    if (kinds_ == nullptr)
      GTEST_SKIP() << "skipped: the plugin has no layer-kinds extension (ABI 1.2)";
    if (kinds_->supports_mixer(BONSAI_MIXER_GATED_DELTA_NET) != BONSAI_OK)
      GTEST_SKIP() << "skipped: the plugin runs no gated DeltaNet layers";
    if (std::getenv("BONSAI_PLUGIN") == nullptr)
      options_ = "kernels=reference"; // the CPU plugin's exact set: identical bits
  }

  const bonsai_backend_api &api() const { return library_->api(); }
  bool exact() const { return !options_.empty(); }

  std::unique_ptr<PluginModel> open_model() const {
    ContextConfig config;
    config.options = options_;
    config.max_context = 64;
    config.max_batch = 48;
    return std::make_unique<PluginModel>(api(), golden_.gguf_path, config);
  }

  std::vector<int32_t> prompt(size_t from, size_t to) const {
    return {golden_.prompt.begin() + static_cast<std::ptrdiff_t>(from),
            golden_.prompt.begin() + static_cast<std::ptrdiff_t>(to)};
  }

  // The logits of prompt[kSplit..] after prompt[..kSplit], on a fresh
  // context; they must match the float64 reference's rows.
  std::vector<float> fresh_tail() const {
    auto model = open_model();
    model->runner().step(prompt(0, kSplit), false);
    std::vector<float> logits = model->runner().step(prompt(kSplit, golden_.prompt.size()));
    expect_reference_tail(logits);
    return logits;
  }

  // Rows for prompt[kSplit..] against the golden float64 logits.
  void expect_reference_tail(const std::vector<float> &logits) const {
    const size_t n = golden_.prompt.size() - kSplit;
    ASSERT_EQ(logits.size(), n * kGoldenVocab);
    for (size_t row = 0; row < n; ++row)
      EXPECT_GE(cosine(logits.data() + row * kGoldenVocab,
                       golden_.ref_logits.data() + (kSplit + row) * kGoldenVocab, kGoldenVocab),
                exact() ? 0.99999 : 0.996)
          << "position " << kSplit + row << " against the float64 reference";
  }

  void expect_same(const std::vector<float> &got, const std::vector<float> &want,
                   const std::string &what) const {
    ASSERT_EQ(got.size(), want.size()) << what;
    if (exact()) {
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << what;
      return;
    }
    for (size_t row = 0; row < got.size() / kGoldenVocab; ++row)
      EXPECT_GE(
          cosine(got.data() + row * kGoldenVocab, want.data() + row * kGoldenVocab, kGoldenVocab),
          0.9995)
          << what << ", token " << row;
  }

  int32_t save(const PluginModel &model, int32_t slot) const {
    int32_t id = 0;
    EXPECT_EQ(kinds_->checkpoint_save(model.ctx(), slot, &id), BONSAI_OK)
        << api().last_error(model.ctx());
    return id;
  }

  GoldenCase golden_;
  std::unique_ptr<PluginLibrary> library_;
  const bonsai_layer_kinds_extension *kinds_ = nullptr;
  std::string options_;
};

TEST_P(LayerKinds, PromptLogitsMatchTheFloat64Reference) {
  auto model = open_model();
  const std::vector<float> logits = model->runner().step(golden_.prompt);
  ASSERT_EQ(logits.size(), golden_.ref_logits.size());
  double worst = 1.0;
  for (size_t t = 0; t < golden_.prompt.size(); ++t)
    worst = std::min(worst, cosine(logits.data() + t * kGoldenVocab,
                                   golden_.ref_logits.data() + t * kGoldenVocab, kGoldenVocab));
  std::cout << "[ golden   ] " << GetParam() << " through bind_layered_model ["
            << (exact() ? options_ : "plugin default") << "]: min cosine " << worst << "\n";
  EXPECT_GE(worst, exact() ? 0.99999 : 0.996);

  uint64_t bytes = 0;
  ASSERT_EQ(kinds_->state_bytes(model->ctx(), &bytes), BONSAI_OK);
  // Every DeltaNet layer's window ((K-1) x conv channels) and H_v states of d x d.
  const DeltaNetHparams &g = model->spec().hparams.hybrid->delta_net;
  int64_t n_delta_net = 0;
  for (const LayerWeights &layer : model->spec().layers)
    n_delta_net += layer.recurrent();
  const int64_t floats = (g.conv_kernel - 1) * g.conv_dim() + g.n_v_heads * g.head_dim * g.head_dim;
  EXPECT_EQ(bytes, static_cast<uint64_t>(n_delta_net * floats * 4));
}

TEST_P(LayerKinds, AStepNeverEndedLeavesTheStateAsItWas) {
  auto model = open_model();
  const StepRunner runner = model->runner();
  runner.step(prompt(0, kSplit), false);
  // Half a step of other tokens: every layer encoded, then abandoned.
  const std::vector<int32_t> other(8, 7);
  std::vector<int32_t> positions(other.size());
  std::iota(positions.begin(), positions.end(), kSplit);
  bonsai_step_desc step{sizeof step, static_cast<int32_t>(other.size()), other.data(),
                        positions.data()};
  ASSERT_EQ(api().begin_step(model->ctx(), &step), BONSAI_OK);
  for (int l = 0; l < static_cast<int>(model->spec().layers.size()); ++l)
    ASSERT_EQ(api().encode_layer(model->ctx(), l), BONSAI_OK);
  expect_same(runner.step(prompt(kSplit, golden_.prompt.size())), fresh_tail(),
              "after an abandoned step");
}

TEST_P(LayerKinds, ACutBackSlotStepsOnlyFromARestoredCheckpoint) {
  auto model = open_model();
  const StepRunner runner = model->runner();
  bonsai_context *ctx = model->ctx();
  runner.step(prompt(0, kSplit), false);
  const int32_t at_split = save(*model, 0);
  int32_t position = -1;
  ASSERT_EQ(kinds_->checkpoint_position(ctx, at_split, &position), BONSAI_OK);
  EXPECT_EQ(position, kSplit);
  runner.step(prompt(kSplit, golden_.prompt.size()), false);

  ASSERT_EQ(api().kv_truncate(ctx, 30), BONSAI_OK);
  EXPECT_THROW(runner.step(prompt(30, 31)), std::runtime_error);
  EXPECT_NE(std::string(api().last_error(ctx)).find("restore a checkpoint"), std::string::npos)
      << api().last_error(ctx);
  int32_t refused = 0;
  EXPECT_EQ(kinds_->checkpoint_save(ctx, 0, &refused), BONSAI_ERR_BAD_STATE);

  ASSERT_EQ(kinds_->checkpoint_restore(ctx, at_split, 0), BONSAI_OK);
  int32_t length = 0;
  ASSERT_EQ(api().kv_length(ctx, &length), BONSAI_OK);
  EXPECT_EQ(length, kSplit);
  expect_same(runner.step(prompt(kSplit, golden_.prompt.size())), fresh_tail(),
              "after restoring the checkpoint");

  // A checkpoint stays after a restore and can be used again.
  ASSERT_EQ(kinds_->checkpoint_restore(ctx, at_split, 0), BONSAI_OK);
  expect_same(runner.step(prompt(kSplit, golden_.prompt.size())), fresh_tail(),
              "after restoring it a second time");
}

TEST_P(LayerKinds, ResetZeroesTheState) {
  auto model = open_model();
  const StepRunner runner = model->runner();
  runner.step(golden_.prompt, false);
  ASSERT_EQ(api().kv_reset(model->ctx()), BONSAI_OK);
  runner.step(prompt(0, kSplit), false);
  expect_same(runner.step(prompt(kSplit, golden_.prompt.size())), fresh_tail(), "after kv_reset");
}

// The other ways to cut a slot back: truncating to 0 zeroes the state;
// slot_truncate to a prefix leaves it behind, and so does a whole-slot copy
// of such a slot, until a checkpoint is restored.
TEST_P(LayerKinds, EveryCutBackFollowsTheStateRules) {
  const bonsai_sequences_extension *seq = sequences_extension(api());
  if (seq == nullptr)
    GTEST_SKIP() << "skipped: the plugin has no sequences extension";
  auto model = open_model();
  bonsai_context *ctx = model->ctx();
  const StepRunner runner = model->runner();
  runner.step(golden_.prompt, false);
  ASSERT_EQ(api().kv_truncate(ctx, 0), BONSAI_OK);
  runner.step(prompt(0, kSplit), false);
  expect_same(runner.step(prompt(kSplit, golden_.prompt.size())), fresh_tail(),
              "after kv_truncate(0)");

  int32_t slot = 0, copy = 0;
  ASSERT_EQ(seq->slot_create(ctx, &slot), BONSAI_OK);
  ASSERT_EQ(seq->slot_create(ctx, &copy), BONSAI_OK);
  ASSERT_EQ(seq->slot_copy(ctx, 0, slot, kSplit + 10), BONSAI_OK) << "a prefix of slot 0";
  ASSERT_EQ(seq->slot_truncate(ctx, 0, kSplit), BONSAI_OK);
  ASSERT_EQ(seq->slot_copy(ctx, 0, copy, kSplit), BONSAI_OK) << "all of slot 0, which is behind";
  const std::vector<int32_t> next = prompt(kSplit, kSplit + 1);
  for (const int32_t s : {0, slot, copy}) {
    int32_t length = 0;
    ASSERT_EQ(seq->slot_length(ctx, s, &length), BONSAI_OK);
    const std::vector<int32_t> pos{length};
    bonsai_sequence_step entry{sizeof entry, s, 1, next.data(), pos.data()};
    bonsai_batch_step_desc batch{sizeof batch, 1, &entry};
    EXPECT_EQ(seq->begin_batch(ctx, &batch), BONSAI_ERR_BAD_STATE) << "slot " << s;
  }
}

TEST_P(LayerKinds, CheckpointMisuseGetsClearErrors) {
  auto model = open_model();
  bonsai_context *ctx = model->ctx();
  model->runner().step(prompt(0, kSplit), false);
  const int32_t id = save(*model, 0);
  EXPECT_EQ(kinds_->checkpoint_restore(ctx, id + 100, 0), BONSAI_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api().last_error(ctx)).find("does not exist"), std::string::npos);
  ASSERT_EQ(api().kv_truncate(ctx, 5), BONSAI_OK);
  EXPECT_EQ(kinds_->checkpoint_restore(ctx, id, 0), BONSAI_ERR_INVALID_ARGUMENT)
      << "a slot shorter than the checkpoint cannot take it";
  EXPECT_EQ(kinds_->checkpoint_restore(ctx, id, 42), BONSAI_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kinds_->checkpoint_save(ctx, 0, nullptr), BONSAI_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(kinds_->checkpoint_free(ctx, id), BONSAI_OK);
  EXPECT_EQ(kinds_->checkpoint_free(ctx, id), BONSAI_ERR_INVALID_ARGUMENT);
}

// Slots and a step over two sequences (sequences extension): a whole-slot
// copy carries the state, a prefix copy needs a checkpoint, and a batched
// step gives each sequence its own logits.
TEST_P(LayerKinds, SlotsCarryTheirOwnStateThroughABatchedStep) {
  const bonsai_sequences_extension *seq = sequences_extension(api());
  if (seq == nullptr)
    GTEST_SKIP() << "skipped: the plugin has no sequences extension";
  auto model = open_model();
  bonsai_context *ctx = model->ctx();
  const StepRunner runner = model->runner();
  runner.step(prompt(0, kSplit), false);
  const int32_t at_split = save(*model, 0);
  runner.step(prompt(kSplit, 30), false);

  int32_t whole = 0, prefix = 0;
  ASSERT_EQ(seq->slot_create(ctx, &whole), BONSAI_OK);
  ASSERT_EQ(seq->slot_create(ctx, &prefix), BONSAI_OK);
  ASSERT_EQ(seq->slot_copy(ctx, 0, whole, 30), BONSAI_OK);
  ASSERT_EQ(seq->slot_copy(ctx, 0, prefix, kSplit), BONSAI_OK);

  // slot 0 and `whole` both continue at 30; `prefix` from the checkpoint.
  const std::vector<int32_t> tail30 = prompt(30, golden_.prompt.size());
  const std::vector<int32_t> tail20 = prompt(kSplit, golden_.prompt.size());
  std::vector<int32_t> pos30(tail30.size()), pos20(tail20.size());
  std::iota(pos30.begin(), pos30.end(), 30);
  std::iota(pos20.begin(), pos20.end(), kSplit);
  bonsai_sequence_step entries[2] = {
      {sizeof(bonsai_sequence_step), whole, static_cast<int32_t>(tail30.size()), tail30.data(),
       pos30.data()},
      {sizeof(bonsai_sequence_step), prefix, static_cast<int32_t>(tail20.size()), tail20.data(),
       pos20.data()}};
  bonsai_batch_step_desc batch{sizeof batch, 2, entries};
  EXPECT_EQ(seq->begin_batch(ctx, &batch), BONSAI_ERR_BAD_STATE)
      << "the prefix copy's state is behind it";
  ASSERT_EQ(kinds_->checkpoint_restore(ctx, at_split, prefix), BONSAI_OK);
  ASSERT_EQ(seq->begin_batch(ctx, &batch), BONSAI_OK) << api().last_error(ctx);
  for (int l = 0; l < static_cast<int>(model->spec().layers.size()); ++l)
    ASSERT_EQ(api().encode_layer(ctx, l), BONSAI_OK) << api().last_error(ctx);
  const size_t n_tokens = tail30.size() + tail20.size();
  std::vector<float> logits(n_tokens * kGoldenVocab);
  bonsai_lm_head_desc head{sizeof head, 0, static_cast<int32_t>(n_tokens), logits.data(), nullptr};
  ASSERT_EQ(api().lm_head(ctx, &head), BONSAI_OK);
  ASSERT_EQ(api().end_step(ctx), BONSAI_OK);

  // What slot 0 gives alone for the same tail, and a fresh run for tail20.
  const std::vector<float> alone30 = runner.step(tail30);
  const std::vector<float> got30(logits.begin(),
                                 logits.begin() + static_cast<std::ptrdiff_t>(alone30.size()));
  const std::vector<float> got20(logits.begin() + static_cast<std::ptrdiff_t>(alone30.size()),
                                 logits.end());
  expect_same(got30, alone30, "the whole-slot copy in a batch");
  expect_same(got20, fresh_tail(), "the restored prefix copy in a batch");
}

// A layered description that is wrong in one place gets one error naming
// that place, and the model bound before stays bound and working.
TEST_P(LayerKinds, BadLayeredDescriptionsGetAClearError) {
  auto model = open_model();
  bonsai_context *ctx = model->ctx();
  const binding::LayeredBinding &good = model->binding().layered;
  const auto first_of = [&good](uint32_t kind) {
    for (size_t i = 0; i < good.layers.size(); ++i)
      if (good.layers[i].mixer_kind == kind)
        return i;
    return good.layers.size();
  };
  const size_t gdn = first_of(BONSAI_MIXER_GATED_DELTA_NET);
  const size_t attn = first_of(BONSAI_MIXER_GATED_ATTENTION);
  ASSERT_LT(gdn, good.layers.size());
  ASSERT_LT(attn, good.layers.size());

  struct Case {
    const char *what;
    std::function<void(std::vector<bonsai_layer_desc> &, bonsai_gated_delta_net_mixer &,
                       bonsai_gated_attention_mixer &)>
        spoil;
    bonsai_status status;
    std::string message;
  };
  const std::string g = "layers[" + std::to_string(gdn) + "]";
  const std::string a = "layers[" + std::to_string(attn) + "]";
  const std::vector<Case> cases = {
      {"an unknown mixer kind", [&](auto &l, auto &, auto &) { l[gdn].mixer_kind = 99; },
       BONSAI_ERR_UNSUPPORTED, g + ": mixer kind 99"},
      {"a NULL mixer", [&](auto &l, auto &, auto &) { l[attn].mixer = nullptr; },
       BONSAI_ERR_INVALID_ARGUMENT, a + ".mixer is NULL"},
      {"value heads not a multiple of q/k heads",
       [&](auto &, auto &d, auto &) { d.n_v_heads = d.n_k_heads + 1; }, BONSAI_ERR_INVALID_ARGUMENT,
       g + ": conv_kernel"},
      {"an odd n_rot", [&](auto &, auto &, auto &m) { m.n_rot = 3; }, BONSAI_ERR_INVALID_ARGUMENT,
       a + ": n_rot 3"},
      {"a query projection of the wrong shape", [&](auto &, auto &, auto &m) { m.wq = m.wk; },
       BONSAI_ERR_INVALID_ARGUMENT, a + ".mixer.wq"},
      {"missing conv taps", [&](auto &, auto &d, auto &) { d.conv = nullptr; },
       BONSAI_ERR_INVALID_ARGUMENT, g + ".mixer.conv is NULL"},
  };
  for (const Case &c : cases) {
    std::vector<bonsai_layer_desc> layers = good.layers;
    bonsai_gated_delta_net_mixer delta_net =
        *static_cast<const bonsai_gated_delta_net_mixer *>(good.layers[gdn].mixer);
    bonsai_gated_attention_mixer attention =
        *static_cast<const bonsai_gated_attention_mixer *>(good.layers[attn].mixer);
    layers[gdn].mixer = &delta_net;
    layers[attn].mixer = &attention;
    c.spoil(layers, delta_net, attention);
    bonsai_layered_model_desc desc = good.desc;
    desc.layers = layers.data();
    EXPECT_EQ(kinds_->bind_layered_model(ctx, &desc), c.status) << c.what;
    EXPECT_NE(std::string(api().last_error(ctx)).find(c.message), std::string::npos)
        << c.what << ": " << api().last_error(ctx);
  }
  model->runner().step(prompt(0, kSplit), false);
  expect_reference_tail(model->runner().step(prompt(kSplit, golden_.prompt.size())));
}

INSTANTIATE_TEST_SUITE_P(TinyQwen35, LayerKinds, ::testing::Values("tiny-q35-q1", "tiny-q35-q2g64"),
                         [](const auto &info) {
                           std::string name = info.param;
                           return bonsai::test::test_name(name);
                         });

} // namespace
} // namespace bonsai::test
