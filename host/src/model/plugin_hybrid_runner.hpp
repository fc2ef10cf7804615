#pragma once
// A qwen35 model whose layers the plugin runs itself (ABI 1.2 layer kinds):
// the step protocol of PluginLayerRunner on the context's own slot, plus the
// plugin's checkpoints of the recurrent state (SlotCheckpoints), since that
// state cannot be cut back like a KV cache. truncate(n) restores the last
// checkpoint at or before n and runs the tokens from there to n again
// (docs/models.md, "Checkpoints").
#include "bonsai/bonsai_backend.h"
#include "model/forward_runner.hpp"
#include "model/plugin_layer_runner.hpp"
#include "model/slot_checkpoints.hpp"

namespace bonsai::host {

class PluginHybridRunner final : public ForwardRunner {
public:
  // `context` has a layered model bound through `kinds` and outlives this.
  PluginHybridRunner(const PluginContext &context, const bonsai_layer_kinds_extension &kinds,
                     int32_t n_layer, int32_t n_batch);

  bool run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                const std::atomic<bool> &cancel) override;
  void truncate(int32_t n_keep) override;
  int32_t kv_length() const override { return steps_.kv_length(); }
  bool gives_hidden_states() const override { return steps_.gives_hidden_states(); }

private:
  PluginLayerRunner steps_;
  int32_t n_batch_ = 1;
  SlotCheckpoints checkpoints_; // of slot 0, the context's own cache
};

} // namespace bonsai::host
