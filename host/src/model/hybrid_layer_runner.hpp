#pragma once
// Runs a qwen35 model (gated DeltaNet layers with a gated attention layer
// every few; docs/models.md) on the host in f32, with the plugin's matmul
// for every projection and the LM head: how a plugin without the ABI 1.2
// layer kinds (a 1.1 plugin, the CUDA plugin) runs qwen35.
//
// A sequence's recurrent state (each DeltaNet layer's last K-1 conv inputs
// and d x d state per value head) cannot be cut back like a KV cache, so the
// runner keeps checkpoints: copies of it at chosen positions. truncate(n)
// restores the last checkpoint at or before n and runs the tokens from there
// to n again; a step cancelled or failed half-way is undone the same way.
#include <vector>

#include "bonsai/core/delta_net.hpp"
#include "bonsai/core/model_spec.hpp"
#include "model/forward_runner.hpp"
#include "model/host_projection.hpp"
#include "model/matmul_layer_runner.hpp"

namespace bonsai::host {

class HybridLayerRunner final : public ForwardRunner {
public:
  // `context`, `spec` (a qwen35 spec) and `weights` outlive this.
  HybridLayerRunner(const PluginContext &context, const ModelSpec &spec,
                    const UploadedModel &weights, const MatmulRunnerConfig &config);

  bool run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                const std::atomic<bool> &cancel) override;
  void truncate(int32_t n_keep) override;
  int32_t kv_length() const override { return length_; }
  bool gives_hidden_states() const override { return true; }

  // Bytes of one copy of the recurrent state, and how many checkpoints are kept.
  size_t state_bytes() const { return (conv_.size() + ssm_.size()) * sizeof(float); }
  size_t max_checkpoints() const { return max_checkpoints_; }

private:
  struct DeltaNetLayer {
    std::vector<float> conv_taps; // [conv_dim][K]
    std::vector<float> dt_bias, a, norm;
    size_t index = 0; // among the DeltaNet layers: which conv_/ssm_ block
  };
  struct AttentionLayer {
    std::vector<float> q_norm, k_norm;
    size_t index = 0; // among the attention layers: which KV cache block
  };
  struct Checkpoint {
    int32_t position = 0;
    std::vector<float> conv, ssm;
  };

  // Every layer for the n tokens in x_; false when `cancel` stopped it
  // between layers (the recurrent state is then part-way advanced).
  bool run_layers(int32_t n_tokens, const std::atomic<bool> *cancel);
  void delta_net(int32_t layer, int32_t n_tokens);
  void conv_and_rule(const DeltaNetLayer &w, int32_t n_tokens);
  void attention(int32_t layer, int32_t n_tokens);
  // The state at `position` (<= length_): from the last checkpoint at or
  // before it, running the tokens in between again.
  void rebuild(int32_t position);
  void maybe_checkpoint(int32_t n_tokens, bool may_cut_back);
  void save_checkpoint();

  const ModelSpec &spec_;
  const UploadedModel &weights_;
  MatmulRunnerConfig config_;
  HostProjection projection_;
  int32_t n_embd_, n_head_, n_head_kv_, head_dim_, q_dim_, kv_dim_;
  int32_t conv_k_, conv_dim_, key_dim_, value_dim_, gdn_dim_, n_k_heads_, n_v_heads_;
  float eps_;
  DeltaNetShape shape_;
  std::vector<double> rope_rates_;
  double rope_magnitude_ = 1.0;
  std::vector<std::vector<float>> attn_norms_;   // per layer
  std::vector<DeltaNetLayer> delta_net_layers_;  // per layer (empty for attention layers)
  std::vector<AttentionLayer> attention_layers_; // per layer (empty for DeltaNet layers)

  std::vector<float> k_cache_, v_cache_; // [attention layer][position][kv_dim]
  std::vector<float> conv_;              // [DeltaNet layer][K - 1][conv_dim], oldest first
  std::vector<float> ssm_;               // [DeltaNet layer][value head][d key][d value]
  int32_t length_ = 0;
  std::vector<int32_t> tokens_;         // every token in the cache, to run again from a checkpoint
  std::vector<Checkpoint> checkpoints_; // by position; the empty state at 0 is implicit
  size_t max_checkpoints_ = 1;
  // The recurrent state is part-way through a step (one that failed or is
  // being undone): the next call rebuilds it before anything else.
  bool dirty_ = false;

  // Scratch for n_batch tokens.
  std::vector<float> x_, h_, mix_, act_, z_, beta_, decay_, qg_, q_, k_, v_, attn_, proj_, scores_;
  std::vector<float> delta_;
};

} // namespace bonsai::host
