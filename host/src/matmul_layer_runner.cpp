#include "matmul_layer_runner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "bonsai/core/formats.hpp"

namespace bonsai::host {
namespace {

std::vector<float> dequantize_vector(const TensorView &tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.n_elements()));
  dequantize_row(tensor.type, tensor.data, values.data(), tensor.n_elements());
  return values;
}

// out = v / sqrt(mean(v^2) + eps) * weight, for one vector of n values.
void rms_norm(const float *v, const float *weight, int64_t n, float eps, float *out) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum_sq += static_cast<double>(v[i]) * v[i];
  const auto scale = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i)
    out[i] = v[i] * scale * weight[i];
}

// NEOX RoPE: rotates the pairs (i, i + half) of one head by pos * inv_freq[i].
void rope_neox(float *head, int32_t head_dim, int32_t pos, const std::vector<double> &inv_freq,
               double magnitude) {
  const int32_t half = head_dim / 2;
  for (int32_t i = 0; i < half; ++i) {
    // The angle in double: pos * freq reaches thousands of radians, where f32
    // would lose the low bits the reference keeps.
    const double angle = static_cast<double>(pos) * inv_freq[static_cast<size_t>(i)];
    const auto c = static_cast<float>(magnitude * std::cos(angle));
    const auto s = static_cast<float>(magnitude * std::sin(angle));
    const float a = head[i];
    const float b = head[i + half];
    head[i] = a * c - b * s;
    head[i + half] = a * s + b * c;
  }
}

float silu(float v) {
  return v / (1.0f + std::exp(-v));
}

} // namespace

MatmulLayerRunner::MatmulLayerRunner(const PluginContext &context, const ModelSpec &spec,
                                     const UploadedModel &weights, const MatmulRunnerConfig &config)
    : context_(context), spec_(spec), weights_(weights), config_(config) {
  const auto &hp = spec.hparams;
  n_embd_ = static_cast<int32_t>(hp.n_embd);
  n_head_ = static_cast<int32_t>(hp.n_head);
  n_head_kv_ = static_cast<int32_t>(hp.n_head_kv);
  head_dim_ = static_cast<int32_t>(hp.head_dim);
  n_ff_ = static_cast<int32_t>(hp.n_ff);
  n_vocab_ = static_cast<int32_t>(hp.n_vocab);
  q_dim_ = n_head_ * head_dim_;
  kv_dim_ = n_head_kv_ * head_dim_;
  eps_ = hp.rms_eps;

  inv_freq_ = rope_inv_freq(hp.rope, hp.head_dim);
  rope_magnitude_ = rope_magnitude(hp.rope);

  norms_.reserve(spec.layers.size());
  for (const auto &layer : spec.layers)
    norms_.push_back({dequantize_vector(layer.attn_norm), dequantize_vector(layer.attn_q_norm),
                      dequantize_vector(layer.attn_k_norm), dequantize_vector(layer.ffn_norm)});
  output_norm_ = dequantize_vector(spec.output_norm);

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
  gate_.resize(batch * n_ff_);
  up_.resize(batch * n_ff_);
  scores_.resize(static_cast<size_t>(config.n_ctx));
}

void MatmulLayerRunner::matmul(const bonsai_weight *weight, int32_t n_tokens, const float *x,
                               float *y) const {
  bonsai_matmul_desc desc{};
  desc.struct_size = sizeof desc;
  desc.weight = weight;
  desc.n_tokens = n_tokens;
  desc.x = x;
  desc.y = y;
  context_.check(context_.api().matmul(context_.get(), &desc), "matmul");
}

void MatmulLayerRunner::embed(std::span<const int32_t> tokens) {
  const TensorView &embd = spec_.token_embd;
  const size_t row = row_bytes(embd.type, n_embd_);
  for (size_t t = 0; t < tokens.size(); ++t)
    dequantize_row(embd.type, embd.data + static_cast<size_t>(tokens[t]) * row,
                   x_.data() + t * n_embd_, n_embd_);
}

void MatmulLayerRunner::attention(int32_t layer, int32_t n_tokens) {
  const size_t layer_offset = static_cast<size_t>(layer) * config_.n_ctx * kv_dim_;
  const float *keys = k_cache_.data() + layer_offset;
  const float *values = v_cache_.data() + layer_offset;
  const int32_t group = n_head_ / n_head_kv_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  for (int32_t t = 0; t < n_tokens; ++t) {
    const int32_t n_visible = length_ + t + 1; // causal: itself and everything before
    for (int32_t head = 0; head < n_head_; ++head) {
      const float *q = q_.data() + static_cast<size_t>(t) * q_dim_ + head * head_dim_;
      const int32_t kv_head = head / group;
      float max_score = -std::numeric_limits<float>::infinity();
      for (int32_t p = 0; p < n_visible; ++p) {
        const float *k = keys + static_cast<size_t>(p) * kv_dim_ + kv_head * head_dim_;
        float dot = 0.0f;
        for (int32_t i = 0; i < head_dim_; ++i)
          dot += q[i] * k[i];
        scores_[static_cast<size_t>(p)] = dot * scale;
        max_score = std::max(max_score, dot * scale);
      }
      double total = 0.0;
      for (int32_t p = 0; p < n_visible; ++p) {
        const float e = std::exp(scores_[static_cast<size_t>(p)] - max_score);
        scores_[static_cast<size_t>(p)] = e;
        total += e;
      }
      float *out = attn_.data() + static_cast<size_t>(t) * q_dim_ + head * head_dim_;
      std::fill(out, out + head_dim_, 0.0f);
      const auto inv_total = static_cast<float>(1.0 / total);
      for (int32_t p = 0; p < n_visible; ++p) {
        const float weight = scores_[static_cast<size_t>(p)] * inv_total;
        const float *v = values + static_cast<size_t>(p) * kv_dim_ + kv_head * head_dim_;
        for (int32_t i = 0; i < head_dim_; ++i)
          out[i] += weight * v[i];
      }
    }
  }
}

void MatmulLayerRunner::run_layer(int32_t layer, int32_t n_tokens) {
  const auto &w = weights_.layers[static_cast<size_t>(layer)];
  const auto &norms = norms_[static_cast<size_t>(layer)];
  const auto n = static_cast<size_t>(n_tokens);

  for (size_t t = 0; t < n; ++t)
    rms_norm(x_.data() + t * n_embd_, norms.attn.data(), n_embd_, eps_, h_.data() + t * n_embd_);
  matmul(w.wq, n_tokens, h_.data(), q_.data());
  matmul(w.wk, n_tokens, h_.data(), k_.data());
  matmul(w.wv, n_tokens, h_.data(), v_.data());

  const size_t layer_offset = static_cast<size_t>(layer) * config_.n_ctx * kv_dim_;
  for (size_t t = 0; t < n; ++t) {
    const int32_t pos = length_ + static_cast<int32_t>(t);
    for (int32_t head = 0; head < n_head_; ++head) {
      float *q = q_.data() + t * q_dim_ + head * head_dim_;
      rms_norm(q, norms.q.data(), head_dim_, eps_, q);
      rope_neox(q, head_dim_, pos, inv_freq_, rope_magnitude_);
    }
    for (int32_t head = 0; head < n_head_kv_; ++head) {
      float *k = k_.data() + t * kv_dim_ + head * head_dim_;
      rms_norm(k, norms.k.data(), head_dim_, eps_, k);
      rope_neox(k, head_dim_, pos, inv_freq_, rope_magnitude_);
    }
    const size_t slot = layer_offset + static_cast<size_t>(pos) * kv_dim_;
    std::copy_n(k_.data() + t * kv_dim_, kv_dim_, k_cache_.data() + slot);
    std::copy_n(v_.data() + t * kv_dim_, kv_dim_, v_cache_.data() + slot);
  }
  attention(layer, n_tokens);
  matmul(w.wo, n_tokens, attn_.data(), proj_.data());
  for (size_t i = 0; i < n * n_embd_; ++i)
    x_[i] += proj_[i];

  for (size_t t = 0; t < n; ++t)
    rms_norm(x_.data() + t * n_embd_, norms.ffn.data(), n_embd_, eps_, h_.data() + t * n_embd_);
  matmul(w.w_gate, n_tokens, h_.data(), gate_.data());
  matmul(w.w_up, n_tokens, h_.data(), up_.data());
  for (size_t i = 0; i < n * n_ff_; ++i)
    gate_[i] = silu(gate_[i]) * up_[i];
  matmul(w.w_down, n_tokens, gate_.data(), proj_.data());
  for (size_t i = 0; i < n * n_embd_; ++i)
    x_[i] += proj_[i];
}

void MatmulLayerRunner::lm_head(const StepOutputs &outputs) {
  const auto count = static_cast<size_t>(outputs.count);
  for (size_t i = 0; i < count; ++i)
    rms_norm(x_.data() + (outputs.first + i) * n_embd_, output_norm_.data(), n_embd_, eps_,
             h_.data() + i * n_embd_);
  float *logits = outputs.logits;
  if (logits == nullptr) {
    logits_.resize(count * n_vocab_);
    logits = logits_.data();
  }
  matmul(weights_.desc.lm_head, outputs.count, h_.data(), logits);
  if (outputs.argmax != nullptr)
    for (size_t i = 0; i < count; ++i) {
      const float *row = logits + i * n_vocab_;
      // max_element keeps the first maximum: the lowest id wins ties.
      outputs.argmax[i] = static_cast<int32_t>(std::max_element(row, row + n_vocab_) - row);
    }
}

bool MatmulLayerRunner::run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                                 const std::atomic<bool> &cancel) {
  const auto n_tokens = static_cast<int32_t>(tokens.size());
  if (n_tokens < 1 || n_tokens > config_.n_batch || length_ + n_tokens > config_.n_ctx)
    throw Error(fmt::format("internal: step of {} tokens at position {} does not fit (batch {}, "
                            "context {})",
                            n_tokens, length_, config_.n_batch, config_.n_ctx));
  embed(tokens);
  for (int32_t layer = 0; layer < static_cast<int32_t>(spec_.layers.size()); ++layer) {
    // KV rows written by an abandoned step lie past length_ and are
    // overwritten by the next one.
    if (cancel.load(std::memory_order_relaxed))
      return false;
    run_layer(layer, n_tokens);
  }
  if (outputs.count > 0)
    lm_head(outputs);
  length_ += n_tokens;
  return true;
}

} // namespace bonsai::host
