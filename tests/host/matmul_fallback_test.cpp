// The host's own layer runner, used when a plugin's bind_model says
// UNSUPPORTED (or the plugin's table ends before bind_model): checked
// against the float64 golden reference through a matmul-only fake plugin.
#include <gtest/gtest.h>

#include <algorithm>

#include "bonsai/engine.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;

bonsai::Engine open_with(const std::string &plugin, int32_t n_batch = 512) {
  bonsai::EngineOptions options;
  options.backend = plugin;
  options.n_ctx = 64;
  options.n_batch = n_batch;
  return bonsai::Engine::open(tiny_q1(), options);
}

bonsai::GenerateRequest greedy_request(const Greedy &golden) {
  bonsai::GenerateRequest request;
  request.prompt_tokens = golden.prompt;
  request.n_predict = static_cast<int32_t>(golden.greedy.size());
  request.sampling.temperature = 0.0f;
  request.stop_tokens.emplace(); // no stop tokens
  return request;
}

class MatmulFallbackGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MatmulFallbackGolden, GreedyTokensMatchGolden) {
  const std::string model = GetParam();
  const Greedy golden = load_greedy(model + ".ref.greedy.json");
  ASSERT_EQ(golden.greedy.size(), 24u);
  bonsai::EngineOptions options;
  options.backend = fake_plugin("fake");
  options.n_ctx = 64;
  const auto engine = bonsai::Engine::open(data_path(model + ".gguf"), options);
  auto session = engine.create_session();
  EXPECT_FALSE(session.plugin_runs_layers());
  const auto result = session.generate(greedy_request(golden));
  EXPECT_EQ(result.tokens, golden.greedy);
  EXPECT_EQ(result.stop_reason, bonsai::StopReason::length);
  EXPECT_EQ(result.stats.prompt_tokens, 8);
  EXPECT_EQ(result.stats.gen_tokens, 24);
}

// Untied Q1_0, tied Q1_0 (LM head = token_embd), ternary Q2_0, YaRN RoPE (the
// host's own layers apply it), and encodings the host converts at upload.
INSTANTIATE_TEST_SUITE_P(GoldenModels, MatmulFallbackGolden,
                         ::testing::Values("tiny-q1", "tiny-q1-tied", "tiny-q2", "tiny-q1-yarn",
                                           "tiny-q2g64", "tiny-ptq1", "tiny-tq2-mixed"),
                         [](const auto &info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(MatmulFallback, LogitsOfEveryPositionMatchReferenceAcrossSteps) {
  const auto prompt = load_prompt("tiny-q1.prompt.json");
  const auto reference = load_f32("tiny-q1.ref.logits.f32");
  ASSERT_EQ(prompt.size(), 48u);
  ASSERT_EQ(reference.size(), 48u * 2048u);
  // n_batch 20: the 48 tokens run as steps of 20, 20 and 8.
  const auto engine = open_with(fake_plugin("fake"), 20);
  auto session = engine.create_session();
  const auto logits = session.eval(prompt, {.all_logits = true});
  ASSERT_EQ(logits.n_outputs, 48);
  ASSERT_EQ(logits.n_vocab, 2048);
  for (int32_t pos = 0; pos < 48; ++pos) {
    const float *ref = reference.data() + static_cast<size_t>(pos) * 2048;
    EXPECT_GE(cosine(logits.row(pos).data(), ref, 2048), 0.99999) << "position " << pos;
  }
  EXPECT_EQ(session.position(), 48);
}

TEST(MatmulFallback, TableShorterThanBindModelIsServedByTheHost) {
  // libbonsai_short.so's struct_size ends before bind_model; behind it sits a
  // bind_model that fails, so a host reading past struct_size would throw.
  const Greedy golden = load_greedy("tiny-q1.ref.greedy.json");
  const auto engine = open_with(fake_plugin("short"));
  auto session = engine.create_session();
  EXPECT_FALSE(session.plugin_runs_layers());
  EXPECT_EQ(session.eval_argmax(golden.prompt), golden.greedy[0]);
}

} // namespace
