#include "model/matmul_layer_runner.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "bonsai/core/error.hpp"
#include "model/layer_math.hpp"

namespace bonsai::host {

void check_step_fits(const MatmulRunnerConfig &config, int32_t n_tokens, int32_t length) {
  if (n_tokens < 1 || n_tokens > config.n_batch || length + n_tokens > config.n_ctx)
    throw Error(fmt::format("internal: step of {} tokens at position {} does not fit (batch {}, "
                            "context {})",
                            n_tokens, length, config.n_batch, config.n_ctx));
}

MatmulLayerRunner::MatmulLayerRunner(const PluginContext &context, const ModelSpec &spec,
                                     const UploadedModel &weights, const MatmulRunnerConfig &config)
    : spec_(spec), weights_(weights), config_(config),
      projection_(context, spec, weights, config.n_batch) {
  const auto &hp = spec.hparams;
  n_embd_ = static_cast<int32_t>(hp.n_embd);
  n_head_ = static_cast<int32_t>(hp.n_head);
  n_head_kv_ = static_cast<int32_t>(hp.n_head_kv);
  head_dim_ = static_cast<int32_t>(hp.head_dim);
  q_dim_ = n_head_ * head_dim_;
  kv_dim_ = n_head_kv_ * head_dim_;
  eps_ = hp.rms_eps;

  inv_freq_ = attention_rope_rates(hp);
  rope_magnitude_ = rope_magnitude(hp.rope);

  norms_.reserve(spec.layers.size());
  for (const auto &layer : spec.layers)
    norms_.push_back({dequantize_vector(layer.attn_norm), dequantize_vector(layer.attn_q_norm),
                      dequantize_vector(layer.attn_k_norm)});

  const size_t cache = spec.layers.size() * static_cast<size_t>(config.n_ctx) * kv_dim_;
  k_cache_.assign(cache, 0.0f);
  v_cache_.assign(cache, 0.0f);

  const auto batch = static_cast<size_t>(config.n_batch);
  x_.resize(batch * n_embd_);
  h_.resize(batch * std::max(n_embd_, q_dim_));
  q_.resize(batch * q_dim_);
  k_.resize(batch * kv_dim_);
  v_.resize(batch * kv_dim_);
  attn_.resize(batch * q_dim_);
  proj_.resize(batch * n_embd_);
  scores_.resize(static_cast<size_t>(config.n_ctx));
}

void MatmulLayerRunner::attention(int32_t layer, int32_t n_tokens) {
  const size_t layer_offset = static_cast<size_t>(layer) * config_.n_ctx * kv_dim_;
  const int32_t group = n_head_ / n_head_kv_;
  for (int32_t t = 0; t < n_tokens; ++t)
    for (int32_t head = 0; head < n_head_; ++head) {
      const int32_t kv_offset = (head / group) * head_dim_;
      HeadAttention a;
      a.query = q_.data() + static_cast<size_t>(t) * q_dim_ + head * head_dim_;
      a.keys = k_cache_.data() + layer_offset + kv_offset;
      a.values = v_cache_.data() + layer_offset + kv_offset;
      a.n_visible = length_ + t + 1; // causal: itself and everything before
      a.head_dim = head_dim_;
      a.stride = kv_dim_;
      attend(a, scores_.data(), attn_.data() + static_cast<size_t>(t) * q_dim_ + head * head_dim_);
    }
}

void MatmulLayerRunner::run_layer(int32_t layer, int32_t n_tokens) {
  const auto &w = weights_.layers[static_cast<size_t>(layer)];
  const auto &norms = norms_[static_cast<size_t>(layer)];
  const auto n = static_cast<size_t>(n_tokens);

  for (size_t t = 0; t < n; ++t)
    rms_norm(x_.data() + t * n_embd_, norms.attn.data(), n_embd_, eps_, h_.data() + t * n_embd_);
  projection_.matmul(w.wq, n_tokens, h_.data(), q_.data());
  projection_.matmul(w.wk, n_tokens, h_.data(), k_.data());
  projection_.matmul(w.wv, n_tokens, h_.data(), v_.data());

  const size_t layer_offset = static_cast<size_t>(layer) * config_.n_ctx * kv_dim_;
  const HeadsRotation q_rotation{norms.q.data(), head_dim_, eps_, inv_freq_, rope_magnitude_};
  const HeadsRotation k_rotation{norms.k.data(), head_dim_, eps_, inv_freq_, rope_magnitude_};
  for (size_t t = 0; t < n; ++t) {
    const int32_t pos = length_ + static_cast<int32_t>(t);
    norm_and_rotate(q_.data() + t * q_dim_, n_head_, pos, q_rotation);
    norm_and_rotate(k_.data() + t * kv_dim_, n_head_kv_, pos, k_rotation);
    const size_t slot = layer_offset + static_cast<size_t>(pos) * kv_dim_;
    std::copy_n(k_.data() + t * kv_dim_, kv_dim_, k_cache_.data() + slot);
    std::copy_n(v_.data() + t * kv_dim_, kv_dim_, v_cache_.data() + slot);
  }
  attention(layer, n_tokens);
  projection_.matmul(w.wo, n_tokens, attn_.data(), proj_.data());
  for (size_t i = 0; i < n * n_embd_; ++i)
    x_[i] += proj_[i];
  projection_.mlp(layer, n_tokens, x_.data());
}

bool MatmulLayerRunner::run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                                 const std::atomic<bool> &cancel) {
  const auto n_tokens = static_cast<int32_t>(tokens.size());
  check_step_fits(config_, n_tokens, length_);
  projection_.embed(tokens, x_.data());
  for (int32_t layer = 0; layer < static_cast<int32_t>(spec_.layers.size()); ++layer) {
    // KV rows written by an abandoned step lie past length_ and are
    // overwritten by the next one.
    if (cancel.load(std::memory_order_relaxed))
      return false;
    run_layer(layer, n_tokens);
  }
  if (outputs.count > 0)
    projection_.lm_head(x_.data(), outputs);
  length_ += n_tokens;
  return true;
}

} // namespace bonsai::host
