#pragma once
// The fallback path for plugins that only multiply matrices (bind_model
// returned UNSUPPORTED): the host runs every Qwen3 layer itself in f32 with
// its own KV cache (docs/architecture.md, "The model") and calls the plugin's matmul() for
// each projection and the LM head. Embedding rows are dequantized on the
// host with core's reference code, straight from the mapped file.
#include <vector>

#include "bonsai/core/model_spec.hpp"
#include "model/forward_runner.hpp"
#include "model/host_projection.hpp"

namespace bonsai::host {

struct MatmulRunnerConfig {
  int32_t n_ctx = 0;   // KV capacity
  int32_t n_batch = 0; // most tokens per step
};

// Throws Error (an internal one: sessions check first) unless a step of
// n_tokens at position `length` fits the batch and the context.
void check_step_fits(const MatmulRunnerConfig &config, int32_t n_tokens, int32_t length);

class MatmulLayerRunner final : public ForwardRunner {
public:
  // `context`, `spec` and `weights` outlive this. Allocates the KV cache
  // (n_layer x n_ctx x n_head_kv x head_dim, keys and values, f32).
  MatmulLayerRunner(const PluginContext &context, const ModelSpec &spec,
                    const UploadedModel &weights, const MatmulRunnerConfig &config);

  bool run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                const std::atomic<bool> &cancel) override;
  void truncate(int32_t n_keep) override { length_ = n_keep; }
  int32_t kv_length() const override { return length_; }
  bool gives_hidden_states() const override { return false; } // qwen3 has no MTP layer

private:
  struct LayerNorms {
    std::vector<float> attn, q, k;
  };
  void run_layer(int32_t layer, int32_t n_tokens);
  void attention(int32_t layer, int32_t n_tokens);

  const ModelSpec &spec_;
  const UploadedModel &weights_;
  MatmulRunnerConfig config_;
  HostProjection projection_;
  int32_t n_embd_, n_head_, n_head_kv_, head_dim_;
  int32_t q_dim_, kv_dim_; // n_head * head_dim, n_head_kv * head_dim
  float eps_;
  std::vector<double> inv_freq_; // RoPE rate of each pair (scaled as the model asks)
  double rope_magnitude_ = 1.0;  // factor on cos and sin
  std::vector<LayerNorms> norms_;
  std::vector<float> k_cache_, v_cache_; // [layer][position][kv_dim]
  int32_t length_ = 0;
  // Scratch sized for n_batch tokens.
  std::vector<float> x_, h_, q_, k_, v_, attn_, proj_, scores_;
};

} // namespace bonsai::host
