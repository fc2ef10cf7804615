#include "model/mtp_layer.hpp"

#include <algorithm>
#include <string>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/rope.hpp"
#include "model/layer_math.hpp"

namespace bonsai::host {

MtpLayer::MtpLayer(const ModelSpec &spec, const MtpWeights &weights, const MtpHandles &handles,
                   MtpMatmul matmul, const MtpLayerConfig &config)
    : embedding_(weights.embed_tokens ? *weights.embed_tokens : spec.token_embd), handles_(handles),
      matmul_(std::move(matmul)), config_(config) {
  const Qwen3Hparams &hp = spec.hparams;
  n_embd_ = static_cast<int32_t>(hp.n_embd);
  n_ff_ = static_cast<int32_t>(hp.n_ff);
  n_vocab_ = static_cast<int32_t>(hp.n_vocab);
  q_dim_ = static_cast<int32_t>(hp.n_head * hp.head_dim);
  kv_dim_ = static_cast<int32_t>(hp.n_head_kv * hp.head_dim);
  eps_ = hp.rms_eps;
  const LayerWeights &l = weights.layer;
  enorm_ = dequantize_vector(weights.enorm);
  hnorm_ = dequantize_vector(weights.hnorm);
  attn_norm_ = dequantize_vector(l.attn_norm);
  q_norm_ = dequantize_vector(l.attn_q_norm);
  k_norm_ = dequantize_vector(l.attn_k_norm);
  ffn_norm_ = dequantize_vector(l.ffn_norm);
  head_norm_ =
      dequantize_vector(weights.shared_head_norm ? *weights.shared_head_norm : spec.output_norm);
  rope_rates_ = attention_rope_rates(hp);
  const auto head_dim = static_cast<int32_t>(hp.head_dim);
  const double magnitude = rope_magnitude(hp.rope);
  shape_ = {static_cast<int32_t>(hp.n_head), static_cast<int32_t>(hp.n_head_kv), head_dim,
            HeadsRotation{q_norm_.data(), head_dim, eps_, rope_rates_, magnitude},
            HeadsRotation{k_norm_.data(), head_dim, eps_, rope_rates_, magnitude}};

  const auto entries = static_cast<size_t>(config.max_entries);
  k_cache_.assign(entries * kv_dim_, 0.0f);
  v_cache_.assign(entries * kv_dim_, 0.0f);
  positions_.reserve(entries);
  const auto batch = static_cast<size_t>(config.n_batch);
  both_.resize(batch * 2 * n_embd_);
  x_.resize(batch * n_embd_);
  h_.resize(batch * n_embd_);
  qg_.resize(batch * 2 * q_dim_);
  q_.resize(batch * q_dim_);
  k_.resize(batch * kv_dim_);
  v_.resize(batch * kv_dim_);
  attn_.resize(batch * q_dim_);
  proj_.resize(batch * n_embd_);
  gate_.resize(batch * n_ff_);
  up_.resize(batch * n_ff_);
  scores_.resize(entries);
}

void MtpLayer::embed(int32_t token, float *out) const {
  const size_t row = row_bytes(embedding_.type, n_embd_);
  dequantize_row(embedding_.type, embedding_.data + static_cast<size_t>(token) * row, out, n_embd_);
}

// x += down(silu(gate u) * up u), u = RMSNorm(x; post_attention_norm).
void MtpLayer::mlp(int32_t n) {
  for (size_t t = 0; t < static_cast<size_t>(n); ++t)
    rms_norm(x_.data() + t * n_embd_, ffn_norm_.data(), n_embd_, eps_, h_.data() + t * n_embd_);
  matmul_(handles_.w_gate, n, h_.data(), gate_.data());
  matmul_(handles_.w_up, n, h_.data(), up_.data());
  for (size_t i = 0; i < static_cast<size_t>(n) * n_ff_; ++i)
    gate_[i] = silu(gate_[i]) * up_[i];
  matmul_(handles_.w_down, n, gate_.data(), proj_.data());
  for (size_t i = 0; i < static_cast<size_t>(n) * n_embd_; ++i)
    x_[i] += proj_[i];
}

void MtpLayer::run(const MtpEntries &e) {
  const auto n = static_cast<int32_t>(e.tokens.size());
  const auto rows = static_cast<size_t>(n);
  if (n < 1 || n > config_.n_batch || size() + n > capacity() || e.positions.size() != rows ||
      e.n_logits < 0 || e.n_logits > n)
    throw Error("MTP layer: " + std::to_string(n) + " entries after " + std::to_string(size()) +
                " do not fit (at most " + std::to_string(config_.n_batch) + " a run, " +
                std::to_string(capacity()) + " in all; " + std::to_string(e.n_logits) +
                " logits asked)");
  // c = eh_proj [RMSNorm(e; enorm) ; RMSNorm(h; hnorm)], the embedding first.
  for (size_t t = 0; t < rows; ++t) {
    float *both = both_.data() + t * 2 * n_embd_;
    embed(e.tokens[t], both);
    rms_norm(both, enorm_.data(), n_embd_, eps_, both);
    rms_norm(e.hidden + t * n_embd_, hnorm_.data(), n_embd_, eps_, both + n_embd_);
  }
  matmul_(handles_.eh_proj, n, both_.data(), x_.data());

  for (size_t t = 0; t < rows; ++t)
    rms_norm(x_.data() + t * n_embd_, attn_norm_.data(), n_embd_, eps_, h_.data() + t * n_embd_);
  matmul_(handles_.wq, n, h_.data(), qg_.data());
  matmul_(handles_.wk, n, h_.data(), k_.data());
  matmul_(handles_.wv, n, h_.data(), v_.data());
  for (size_t t = 0; t < rows; ++t) {
    GatedAttentionToken token;
    token.qg = qg_.data() + t * 2 * q_dim_;
    token.k = k_.data() + t * kv_dim_;
    token.v = v_.data() + t * kv_dim_;
    token.position = e.positions[t];
    token.row = size();
    token.k_cache = k_cache_.data();
    token.v_cache = v_cache_.data();
    token.q = q_.data() + t * q_dim_;
    token.scores = scores_.data();
    token.out = attn_.data() + t * q_dim_;
    gated_attention_token(shape_, token);
    positions_.push_back(e.positions[t]);
  }
  matmul_(handles_.wo, n, attn_.data(), proj_.data());
  for (size_t i = 0; i < rows * n_embd_; ++i)
    x_[i] += proj_[i];
  mlp(n);

  // The head's input (the chained h) and logits of the last n_logits.
  if (e.n_logits > 0) {
    const size_t first = rows - static_cast<size_t>(e.n_logits);
    float *normed = e.out_hidden != nullptr ? e.out_hidden : h_.data();
    for (size_t i = 0; i < static_cast<size_t>(e.n_logits); ++i)
      rms_norm(x_.data() + (first + i) * n_embd_, head_norm_.data(), n_embd_, eps_,
               normed + i * n_embd_);
    matmul_(handles_.head, e.n_logits, normed, e.logits);
  }
}

void MtpLayer::truncate(int32_t n) {
  if (n < size())
    positions_.resize(static_cast<size_t>(n));
}

void MtpLayer::copy_prefix_of(const MtpLayer &other, int32_t n) {
  const auto rows = static_cast<ptrdiff_t>(std::min(n, other.size())) * kv_dim_;
  std::copy(other.k_cache_.begin(), other.k_cache_.begin() + rows, k_cache_.begin());
  std::copy(other.v_cache_.begin(), other.v_cache_.begin() + rows, v_cache_.begin());
  positions_.assign(other.positions_.begin(), other.positions_.begin() + std::min(n, other.size()));
}

} // namespace bonsai::host
