#pragma once
// What every model the host runs through a plugin's matmul shares: the
// projections (plugin matmul), embedding rows dequantized from the mapped
// file, the SwiGLU MLP with its residual, and the final norm + LM head.
#include <span>
#include <vector>

#include "bonsai/core/model_spec.hpp"
#include "model/forward_runner.hpp"
#include "model/model_upload.hpp"
#include "plugins/plugin_context.hpp"

namespace bonsai::host {

// y (n x weight rows) = W x (n x weight cols) through `context`'s plugin;
// PluginError naming `what` when it fails.
void plugin_matmul(const PluginContext &context, const bonsai_weight *weight, int32_t n_tokens,
                   const float *x, float *y, const char *what = "matmul");

class HostProjection {
public:
  // `context`, `spec` and `weights` outlive this. Scratch for n_batch tokens.
  HostProjection(const PluginContext &context, const ModelSpec &spec, const UploadedModel &weights,
                 int32_t n_batch);

  // y (n x weight rows) = W x (n x weight cols) through the plugin.
  void matmul(const bonsai_weight *weight, int32_t n_tokens, const float *x, float *y) const;

  // Rows of token_embd for `tokens` into x (n x n_embd).
  void embed(std::span<const int32_t> tokens, float *x) const;

  // x += down(silu(gate(u)) * up(u)), u = RMSNorm(x; ffn_norm), for n rows.
  void mlp(int32_t layer, int32_t n_tokens, float *x);

  // The final norm and LM head for the rows `outputs` names.
  void lm_head(const float *x, const StepOutputs &outputs);
  // The final norm of n rows of x into out (what the LM head multiplies).
  void final_norm(const float *x, int32_t n, float *out) const;

private:
  const PluginContext &context_;
  const ModelSpec &spec_;
  const UploadedModel &weights_;
  int32_t n_embd_, n_ff_, n_vocab_;
  float eps_;
  std::vector<std::vector<float>> ffn_norms_; // per layer
  std::vector<float> output_norm_;
  std::vector<float> normed_, gate_, up_, down_, logits_;
};

} // namespace bonsai::host
