// ABI compatibility: the example plugin compiled against the ABI 1.0 header
// as released (tests/fake_plugins/abi-1.0) loads in this host, reports its
// version, offers no 1.1 extension and runs the golden model exactly.
#include <gtest/gtest.h>

#include "bonsai/engine.hpp"
#include "host_test_support.hpp"

namespace {

using namespace host_test;

TEST(Abi10Plugin, LoadsAndReportsAbi10) {
  const bonsai::PluginInfo info = bonsai::inspect_plugin(BONSAI_ABI10_PLUGIN);
  ASSERT_TRUE(info.loaded) << info.load_error;
  EXPECT_EQ(info.abi_major, 1u);
  EXPECT_EQ(info.abi_minor, 0u);
  EXPECT_TRUE(info.device_ok) << info.probe_status;
  // A 1.0 probe never writes the 1.1 tail of the host's larger struct.
  EXPECT_EQ(info.device.preference, 0u);
}

TEST(Abi10Plugin, GreedyGenerationMatchesTheFloat64Reference) {
  const Greedy golden = load_greedy("tiny-q1.ref.greedy.json");
  bonsai::EngineOptions options;
  options.backend = BONSAI_ABI10_PLUGIN;
  options.n_ctx = 64;
  const bonsai::Engine engine = bonsai::Engine::open(tiny_q1(), options);
  EXPECT_EQ(engine.backend().abi_minor, 0u);
  bonsai::Session session = engine.create_session();
  EXPECT_FALSE(session.plugin_runs_layers()); // the example plugin offers matmul only
  bonsai::GenerateRequest request;
  request.prompt_tokens = golden.prompt;
  request.n_predict = static_cast<int32_t>(golden.greedy.size());
  request.sampling.temperature = 0.0f;
  request.stop_tokens.emplace();
  EXPECT_EQ(session.generate(request).tokens, golden.greedy);
}

} // namespace
