#include "model/host_projection.hpp"

#include <algorithm>

#include "bonsai/core/formats.hpp"
#include "model/layer_math.hpp"

namespace bonsai::host {

HostProjection::HostProjection(const PluginContext &context, const ModelSpec &spec,
                               const UploadedModel &weights, int32_t n_batch)
    : context_(context), spec_(spec), weights_(weights) {
  const auto &hp = spec.hparams;
  n_embd_ = static_cast<int32_t>(hp.n_embd);
  n_ff_ = static_cast<int32_t>(hp.n_ff);
  n_vocab_ = static_cast<int32_t>(hp.n_vocab);
  eps_ = hp.rms_eps;
  for (const LayerWeights &layer : spec.layers)
    ffn_norms_.push_back(dequantize_vector(layer.ffn_norm));
  output_norm_ = dequantize_vector(spec.output_norm);
  const auto batch = static_cast<size_t>(n_batch);
  normed_.resize(batch * n_embd_);
  gate_.resize(batch * n_ff_);
  up_.resize(batch * n_ff_);
  down_.resize(batch * n_embd_);
}

void plugin_matmul(const PluginContext &context, const bonsai_weight *weight, int32_t n_tokens,
                   const float *x, float *y, const char *what) {
  bonsai_matmul_desc desc{};
  desc.struct_size = sizeof desc;
  desc.weight = weight;
  desc.n_tokens = n_tokens;
  desc.x = x;
  desc.y = y;
  context.check(context.api().matmul(context.get(), &desc), what);
}

void HostProjection::matmul(const bonsai_weight *weight, int32_t n_tokens, const float *x,
                            float *y) const {
  plugin_matmul(context_, weight, n_tokens, x, y);
}

void HostProjection::embed(std::span<const int32_t> tokens, float *x) const {
  const TensorView &embd = spec_.token_embd;
  const size_t row = row_bytes(embd.type, n_embd_);
  for (size_t t = 0; t < tokens.size(); ++t)
    dequantize_row(embd.type, embd.data + static_cast<size_t>(tokens[t]) * row, x + t * n_embd_,
                   n_embd_);
}

void HostProjection::mlp(int32_t layer, int32_t n_tokens, float *x) {
  const auto &w = weights_.layers[static_cast<size_t>(layer)];
  const auto n = static_cast<size_t>(n_tokens);
  const float *norm = ffn_norms_[static_cast<size_t>(layer)].data();
  for (size_t t = 0; t < n; ++t)
    rms_norm(x + t * n_embd_, norm, n_embd_, eps_, normed_.data() + t * n_embd_);
  matmul(w.w_gate, n_tokens, normed_.data(), gate_.data());
  matmul(w.w_up, n_tokens, normed_.data(), up_.data());
  for (size_t i = 0; i < n * n_ff_; ++i)
    gate_[i] = silu(gate_[i]) * up_[i];
  matmul(w.w_down, n_tokens, gate_.data(), down_.data());
  for (size_t i = 0; i < n * n_embd_; ++i)
    x[i] += down_[i];
}

void HostProjection::final_norm(const float *x, int32_t n, float *out) const {
  for (size_t i = 0; i < static_cast<size_t>(n); ++i)
    rms_norm(x + i * n_embd_, output_norm_.data(), n_embd_, eps_, out + i * n_embd_);
}

void HostProjection::lm_head(const float *x, const StepOutputs &outputs) {
  const auto count = static_cast<size_t>(outputs.count);
  final_norm(x + static_cast<size_t>(outputs.first) * n_embd_, outputs.count, normed_.data());
  float *logits = outputs.logits;
  if (logits == nullptr) {
    logits_.resize(count * n_vocab_);
    logits = logits_.data();
  }
  matmul(weights_.desc.lm_head, outputs.count, normed_.data(), logits);
  if (outputs.argmax != nullptr)
    for (size_t i = 0; i < count; ++i) {
      const float *row = logits + i * n_vocab_;
      // max_element keeps the first maximum: the lowest id wins ties.
      outputs.argmax[i] = static_cast<int32_t>(std::max_element(row, row + n_vocab_) - row);
    }
}

} // namespace bonsai::host
