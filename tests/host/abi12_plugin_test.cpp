// ABI compatibility across the 1.3 hidden-states extension: the example plugin
// compiled against the ABI 1.2 header as released (tests/fake_plugins/abi-1.2)
// loads in this host and runs a qwen35 golden model; drafting with the model's
// MTP layer, which reads the trunk's hidden states, works through the host's
// own layers (the plugin offers neither layer kinds nor hidden states) and
// leaves the greedy reply the float64 reference's.
#include <gtest/gtest.h>

#include "bonsai/engine.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;

TEST(Abi12Plugin, LoadsAndReportsAbi12) {
  const bonsai::PluginInfo info = bonsai::inspect_plugin(BONSAI_ABI12_PLUGIN);
  ASSERT_TRUE(info.loaded) << info.load_error;
  EXPECT_EQ(info.abi_major, 1u);
  EXPECT_EQ(info.abi_minor, 2u);
  EXPECT_TRUE(info.device_ok) << info.probe_status;
}

TEST(Abi12Plugin, Qwen35DraftsWithTheMtpLayerThroughTheHostLayers) {
  const Greedy golden = load_greedy("tiny-q35-q1.ref.greedy.json");
  bonsai::EngineOptions options;
  options.backend = BONSAI_ABI12_PLUGIN;
  options.n_ctx = 128;
  const bonsai::Engine engine = bonsai::Engine::open(data_path("tiny-q35-q1.gguf"), options);
  EXPECT_EQ(engine.backend().abi_minor, 2u);
  ASSERT_EQ(engine.model().n_mtp_layers, 1);
  bonsai::Session session = engine.create_session();
  EXPECT_FALSE(session.plugin_runs_layers());
  bonsai::GenerateRequest request =
      greedy_request(golden.prompt, static_cast<int32_t>(golden.greedy.size()));
  request.draft.mtp = true;
  request.draft.adaptive = false;
  request.draft.max = 2;
  request.draft.p_min = 0.0f;
  const bonsai::GenerateResult drafted = session.generate(request);
  EXPECT_EQ(drafted.tokens, golden.greedy);
  EXPECT_GT(drafted.stats.drafted_tokens, 0);
}

} // namespace
