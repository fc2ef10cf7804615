// ABI compatibility across the 1.2 layer kinds: the example plugin compiled
// against the ABI 1.1 header as released (tests/fake_plugins/abi-1.1) loads
// in this host, offers no layer-kinds extension, runs the qwen3 golden model
// exactly and a qwen35 golden model through the host's own layers (the host
// says why in its log), with the exact path's gates.
#include <gtest/gtest.h>

#include "bonsai/engine.hpp"
#include "golden.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;

TEST(Abi11Plugin, LoadsAndReportsAbi11) {
  const bonsai::PluginInfo info = bonsai::inspect_plugin(BONSAI_ABI11_PLUGIN);
  ASSERT_TRUE(info.loaded) << info.load_error;
  EXPECT_EQ(info.abi_major, 1u);
  EXPECT_EQ(info.abi_minor, 1u);
  EXPECT_TRUE(info.device_ok) << info.probe_status;
}

TEST(Abi11Plugin, GreedyQwen3GenerationMatchesTheFloat64Reference) {
  const Greedy golden = load_greedy("tiny-q1.ref.greedy.json");
  bonsai::EngineOptions options;
  options.backend = BONSAI_ABI11_PLUGIN;
  options.n_ctx = 64;
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  bonsai::Session session = engine.create_session();
  bonsai::GenerateRequest request;
  request.prompt_tokens = golden.prompt;
  request.n_predict = static_cast<int32_t>(golden.greedy.size());
  request.sampling.temperature = 0.0f;
  request.stop_tokens.emplace();
  EXPECT_EQ(session.generate(request).tokens, golden.greedy);
}

TEST(Abi11Plugin, Qwen35RunsThroughTheHostLayersAndMatchesTheReference) {
  constexpr int kVocab = 2048;
  const auto golden = bonsai::test::load_golden_case(BONSAI_TEST_DATA_DIR, "tiny-q35-q1", kVocab);
  bonsai::EngineOptions options;
  options.backend = BONSAI_ABI11_PLUGIN;
  options.n_ctx = 64;
  options.n_batch = 48;
  const bonsai::Engine engine = bonsai::Engine::open(golden.gguf_path, options);
  EXPECT_EQ(engine.backend().abi_minor, 1u);
  bonsai::Session session = engine.create_session();
  EXPECT_FALSE(session.plugin_runs_layers());
  const std::vector<float> logits = session.eval(golden.prompt, {.all_logits = true}).logits;
  ASSERT_EQ(logits.size(), golden.ref_logits.size());
  for (size_t t = 0; t < golden.prompt.size(); ++t)
    EXPECT_GE(bonsai::test::cosine(logits.data() + t * kVocab,
                                   golden.ref_logits.data() + t * kVocab, kVocab),
              0.99999)
        << "position " << t;
}

} // namespace
