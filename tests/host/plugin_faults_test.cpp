// Plugin fault injection (issue: reliability): fake plugins that run out of
// memory while the model is uploaded, or fail part-way through a step. The
// host must report the plugin's reason, survive, and stay usable.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;

bonsai::EngineOptions options_for(const std::string &plugin) {
  bonsai::EngineOptions options;
  options.backend = plugin;
  options.n_ctx = 64;
  return options;
}

std::string message_of(const std::function<void()> &action) {
  try {
    action();
  } catch (const bonsai::PluginError &error) {
    return error.what();
  }
  ADD_FAILURE() << "no PluginError was thrown";
  return {};
}

TEST(PluginFaults, OutOfMemoryDuringUploadNamesTheWeightAndThePlugin) {
  // The fake holds five weights: token_embd, then blk.0's attn_norm, attn_q,
  // attn_k and attn_v; the sixth upload (blk.0.attn_q_norm) fails.
  // Weights are uploaded into each session's context.
  const std::string plugin = fake_plugin("uploadoom");
  const auto failing = bonsai::Engine::open(tiny_q1(), options_for(plugin));
  const std::string message = message_of([&] { (void)failing.create_session(); });
  EXPECT_NE(message.find(plugin), std::string::npos) << message;
  EXPECT_NE(message.find("upload_weight(blk.0.attn_q_norm.weight)"), std::string::npos) << message;
  EXPECT_NE(message.find("out of device memory uploading 'blk.0.attn_q_norm.weight'"),
            std::string::npos)
      << message;
  // The process is fine: the same model opens with a working plugin.
  const auto engine = bonsai::Engine::open(tiny_q1(), options_for(fake_plugin("fake")));
  auto session = engine.create_session();
  const std::vector<int32_t> tokens = {1, 2, 3};
  EXPECT_EQ(session.eval(tokens).n_vocab, 2048);
}

bonsai::GenerateRequest greedy(const Greedy &golden, int32_t n_predict) {
  bonsai::GenerateRequest request;
  request.prompt_tokens = golden.prompt;
  request.n_predict = n_predict;
  request.sampling.temperature = 0.0f;
  request.stop_tokens.emplace();
  return request;
}

TEST(PluginFaults, MatmulFailingMidStepIsReportedAfterTheTokensAlreadyStreamed) {
  // 8-token prompt on 4 layers: the prefill makes 7 matmuls per layer plus
  // the LM head (29 calls); the first generated token comes from it. Call 40
  // is the 11th of the next step: layer 1, in the middle of the step.
  ScopedEnv fail_at("BONSAI_FAKE_FAIL_AT_CALL", "40");
  const Greedy golden = load_greedy("tiny-q1.ref.greedy.json");
  const std::string plugin = fake_plugin("matmulfails");
  const auto engine = bonsai::Engine::open(tiny_q1(), options_for(plugin));
  auto session = engine.create_session();
  std::vector<std::string> pieces;
  const std::string message = message_of([&] {
    (void)session.generate(greedy(golden, 5), [&](std::string_view piece) {
      pieces.emplace_back(piece);
      return true;
    });
  });
  EXPECT_NE(message.find(plugin), std::string::npos) << message;
  EXPECT_NE(message.find("device lost in matmul call 40"), std::string::npos) << message;
  // The token from the prefill was streamed before the failure.
  const std::string first = engine.detokenize(std::vector<int32_t>{golden.greedy[0]});
  std::string streamed;
  for (const std::string &piece : pieces)
    streamed += piece;
  EXPECT_EQ(streamed, first);
  // The failed step is not in the cache: the prompt is.
  EXPECT_EQ(session.position(), static_cast<int32_t>(golden.prompt.size()));
}

TEST(PluginFaults, FailureInTheFirstStepLeavesAnEmptyCache) {
  ScopedEnv fail_at("BONSAI_FAKE_FAIL_AT_CALL", "3"); // blk.0's attn_v in the prefill
  const auto engine = bonsai::Engine::open(tiny_q1(), options_for(fake_plugin("matmulfails")));
  auto session = engine.create_session();
  const std::vector<int32_t> tokens = {1, 2, 3, 4};
  const std::string message = message_of([&] { (void)session.eval(tokens); });
  EXPECT_NE(message.find("device lost in matmul call 3"), std::string::npos) << message;
  EXPECT_EQ(session.position(), 0);
}

} // namespace
