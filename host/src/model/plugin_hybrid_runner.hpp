#pragma once
// A qwen35 model whose layers the plugin runs itself (ABI 1.2 layer kinds):
// the step protocol of PluginLayerRunner, plus the plugin's checkpoints of
// the recurrent state, since that state cannot be cut back like a KV cache.
// truncate(n) restores the last checkpoint at or before n and runs the
// tokens from there to n again (docs/models.md, "Checkpoints").
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "model/forward_runner.hpp"
#include "model/plugin_layer_runner.hpp"

namespace bonsai::host {

class PluginHybridRunner final : public ForwardRunner {
public:
  // `context` has a layered model bound through `kinds` and outlives this.
  PluginHybridRunner(const PluginContext &context, const bonsai_layer_kinds_extension &kinds,
                     int32_t n_layer, int32_t n_batch);
  ~PluginHybridRunner() override;
  PluginHybridRunner(const PluginHybridRunner &) = delete;
  PluginHybridRunner &operator=(const PluginHybridRunner &) = delete;

  bool run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                const std::atomic<bool> &cancel) override;
  void truncate(int32_t n_keep) override;
  int32_t kv_length() const override { return steps_.kv_length(); }

  size_t max_checkpoints() const { return max_checkpoints_; }

private:
  struct Saved {
    int32_t position = 0;
    int32_t id = 0; // the plugin's checkpoint
  };

  void save_checkpoint();
  // truncate's work: from the last checkpoint at or before n_keep.
  void rewind(int32_t n_keep);
  void free_checkpoint(const Saved &saved);

  const PluginContext &context_;
  const bonsai_layer_kinds_extension &kinds_;
  PluginLayerRunner steps_;
  int32_t n_batch_ = 1;
  std::vector<int32_t> tokens_;    // every token in the cache, to run again from a checkpoint
  std::vector<Saved> checkpoints_; // by position; the empty state at 0 is implicit
  size_t max_checkpoints_ = 1;
};

} // namespace bonsai::host
