#pragma once
// The fast path: the plugin bound the model and runs whole layers, the LM
// head and the KV cache itself.
#include <vector>

#include "model/forward_runner.hpp"
#include "plugins/plugin_context.hpp"

namespace bonsai::host {

class PluginLayerRunner final : public ForwardRunner {
public:
  // `context` has a model bound (bind_model returned OK) and outlives this.
  // Throws PluginError when the plugin lacks a function this path needs.
  PluginLayerRunner(const PluginContext &context, int32_t n_layer);

  bool run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                const std::atomic<bool> &cancel) override;
  void truncate(int32_t n_keep) override;
  int32_t kv_length() const override { return length_; }
  bool gives_hidden_states() const override { return hidden_states_ != nullptr; }

  // The plugin's KV length changed by a call outside this runner (a
  // checkpoint restore): follow it.
  void follow_length(int32_t length) { length_ = length; }

private:
  const PluginContext &context_;
  int32_t n_layer_ = 0;
  const bonsai_hidden_states_extension *hidden_states_ = nullptr; // NULL: the plugin has none
  int32_t length_ = 0;                                            // mirrors the plugin's KV length
  std::vector<int32_t> positions_;
};

} // namespace bonsai::host
