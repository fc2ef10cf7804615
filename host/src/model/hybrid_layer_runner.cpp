#include "model/hybrid_layer_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "bonsai/core/delta_net.hpp"
#include "model/checkpoint_policy.hpp"
#include "model/gated_attention.hpp"
#include "model/layer_math.hpp"

namespace bonsai::host {

HybridLayerRunner::HybridLayerRunner(const PluginContext &context, const ModelSpec &spec,
                                     const UploadedModel &weights, const MatmulRunnerConfig &config)
    : spec_(spec), weights_(weights), config_(config),
      projection_(context, spec, weights, config.n_batch) {
  const auto &hp = spec.hparams;
  const DeltaNetHparams &g = hp.hybrid.value().delta_net;
  n_embd_ = static_cast<int32_t>(hp.n_embd);
  n_head_ = static_cast<int32_t>(hp.n_head);
  n_head_kv_ = static_cast<int32_t>(hp.n_head_kv);
  head_dim_ = static_cast<int32_t>(hp.head_dim);
  q_dim_ = n_head_ * head_dim_;
  kv_dim_ = n_head_kv_ * head_dim_;
  conv_k_ = static_cast<int32_t>(g.conv_kernel);
  conv_dim_ = static_cast<int32_t>(g.conv_dim());
  key_dim_ = static_cast<int32_t>(g.key_dim());
  value_dim_ = static_cast<int32_t>(g.value_dim());
  gdn_dim_ = static_cast<int32_t>(g.head_dim);
  n_k_heads_ = static_cast<int32_t>(g.n_k_heads);
  n_v_heads_ = static_cast<int32_t>(g.n_v_heads);
  eps_ = hp.rms_eps;
  shape_ = {conv_k_, n_k_heads_, n_v_heads_, gdn_dim_, eps_};
  rope_rates_ = attention_rope_rates(hp);
  rope_magnitude_ = rope_magnitude(hp.rope);

  size_t n_delta_net = 0, n_attention = 0;
  delta_net_layers_.resize(spec.layers.size());
  attention_layers_.resize(spec.layers.size());
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    const LayerWeights &layer = spec.layers[l];
    attn_norms_.push_back(dequantize_vector(layer.attn_norm));
    if (const auto &d = layer.delta_net) {
      delta_net_layers_[l] = {dequantize_vector(d->conv), dequantize_vector(d->dt_bias),
                              dequantize_vector(d->a), dequantize_vector(d->norm), n_delta_net++};
    } else {
      attention_layers_[l] = {dequantize_vector(layer.attn_q_norm),
                              dequantize_vector(layer.attn_k_norm), n_attention++};
    }
  }
  const size_t cache = n_attention * static_cast<size_t>(config.n_ctx) * kv_dim_;
  k_cache_.assign(cache, 0.0f);
  v_cache_.assign(cache, 0.0f);
  conv_.assign(n_delta_net * static_cast<size_t>(conv_k_ - 1) * conv_dim_, 0.0f);
  ssm_.assign(n_delta_net * static_cast<size_t>(n_v_heads_) * gdn_dim_ * gdn_dim_, 0.0f);
  max_checkpoints_ = checkpoint_policy::capacity(state_bytes());

  const auto batch = static_cast<size_t>(config.n_batch);
  x_.resize(batch * n_embd_);
  h_.resize(batch * n_embd_);
  mix_.resize(batch * conv_dim_);
  act_.resize(batch * conv_dim_);
  z_.resize(batch * value_dim_);
  beta_.resize(batch * n_v_heads_);
  decay_.resize(batch * n_v_heads_);
  qg_.resize(batch * 2 * q_dim_);
  q_.resize(batch * q_dim_);
  k_.resize(batch * kv_dim_);
  v_.resize(batch * kv_dim_);
  attn_.resize(batch * std::max(q_dim_, value_dim_));
  proj_.resize(batch * n_embd_);
  scores_.resize(static_cast<size_t>(config.n_ctx));
  delta_.resize(static_cast<size_t>(gdn_dim_));
}

// The causal conv (its window moving on in place), SiLU, the q/k L2 norms
// and the gates; then the delta rule on each value head's state in place.
void HybridLayerRunner::conv_and_rule(const DeltaNetLayer &w, int32_t n_tokens) {
  DeltaNetConvRun conv;
  conv.n_tokens = n_tokens;
  conv.taps = w.conv_taps.data();
  conv.dt_bias = w.dt_bias.data();
  conv.a = w.a.data();
  conv.window_out = conv_.data() + w.index * static_cast<size_t>(shape_.window_floats());
  conv.window_in = conv.window_out;
  conv.mix = mix_.data();
  conv.act = act_.data();
  conv.beta = beta_.data();
  conv.decay = decay_.data();
  delta_net_conv_run(shape_, conv);
  for (int32_t h = 0; h < n_v_heads_; ++h) {
    DeltaRuleRun rule;
    rule.head = h;
    rule.n_tokens = n_tokens;
    rule.act = act_.data();
    rule.beta = beta_.data();
    rule.decay = decay_.data();
    rule.state_out = ssm_.data() + (w.index * n_v_heads_ + static_cast<size_t>(h)) *
                                       static_cast<size_t>(gdn_dim_) * gdn_dim_;
    rule.state_in = rule.state_out;
    rule.scratch = delta_.data();
    rule.out = attn_.data();
    delta_rule_run(shape_, rule);
  }
}

void HybridLayerRunner::delta_net(int32_t layer, int32_t n_tokens) {
  const DeltaNetLayer &w = delta_net_layers_[static_cast<size_t>(layer)];
  const binding::DeltaNetHandles &m = weights_.delta_net[static_cast<size_t>(layer)];
  projection_.matmul(m.qkv, n_tokens, h_.data(), mix_.data());
  projection_.matmul(m.gate, n_tokens, h_.data(), z_.data());
  projection_.matmul(m.beta, n_tokens, h_.data(), beta_.data());
  projection_.matmul(m.alpha, n_tokens, h_.data(), decay_.data());
  conv_and_rule(w, n_tokens);
  // y_h = RMSNorm(o_h; ssm_norm) * silu(z_h), then the output projection.
  for (size_t t = 0; t < static_cast<size_t>(n_tokens); ++t)
    delta_net_gated_norm(shape_, w.norm.data(), z_.data() + t * value_dim_,
                         attn_.data() + t * value_dim_);
  projection_.matmul(m.out, n_tokens, attn_.data(), proj_.data());
}

// Gated attention: the query projection interleaves each head's query and
// output gate; Q/K RMS norms, RoPE on the first n_rot dims, causal attention,
// the output times sigmoid(gate), then the output projection.
void HybridLayerRunner::attention(int32_t layer, int32_t n_tokens) {
  const AttentionLayer &a = attention_layers_[static_cast<size_t>(layer)];
  const auto &w = weights_.layers[static_cast<size_t>(layer)];
  projection_.matmul(w.wq, n_tokens, h_.data(), qg_.data());
  projection_.matmul(w.wk, n_tokens, h_.data(), k_.data());
  projection_.matmul(w.wv, n_tokens, h_.data(), v_.data());
  const size_t cache = a.index * static_cast<size_t>(config_.n_ctx) * kv_dim_;
  GatedAttentionShape shape{
      n_head_, n_head_kv_, head_dim_,
      HeadsRotation{a.q_norm.data(), head_dim_, eps_, rope_rates_, rope_magnitude_},
      HeadsRotation{a.k_norm.data(), head_dim_, eps_, rope_rates_, rope_magnitude_}};
  for (size_t t = 0; t < static_cast<size_t>(n_tokens); ++t) {
    const int32_t pos = length_ + static_cast<int32_t>(t);
    GatedAttentionToken token;
    token.qg = qg_.data() + t * 2 * q_dim_;
    token.k = k_.data() + t * kv_dim_;
    token.v = v_.data() + t * kv_dim_;
    token.position = pos;
    token.row = pos;
    token.k_cache = k_cache_.data() + cache;
    token.v_cache = v_cache_.data() + cache;
    token.q = q_.data() + t * q_dim_;
    token.scores = scores_.data();
    token.out = attn_.data() + t * q_dim_;
    gated_attention_token(shape, token);
  }
  projection_.matmul(w.wo, n_tokens, attn_.data(), proj_.data());
}

bool HybridLayerRunner::run_layers(int32_t n_tokens, const std::atomic<bool> *cancel) {
  const auto n = static_cast<size_t>(n_tokens);
  for (size_t l = 0; l < spec_.layers.size(); ++l) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed))
      return false;
    for (size_t t = 0; t < n; ++t)
      rms_norm(x_.data() + t * n_embd_, attn_norms_[l].data(), n_embd_, eps_,
               h_.data() + t * n_embd_);
    if (spec_.layers[l].recurrent())
      delta_net(static_cast<int32_t>(l), n_tokens);
    else
      attention(static_cast<int32_t>(l), n_tokens);
    for (size_t i = 0; i < n * n_embd_; ++i)
      x_[i] += proj_[i];
    projection_.mlp(static_cast<int32_t>(l), n_tokens, x_.data());
  }
  return true;
}

void HybridLayerRunner::maybe_checkpoint(int32_t n_tokens, bool may_cut_back) {
  if (checkpoint_policy::due(length_, n_tokens, may_cut_back))
    save_checkpoint();
}

void HybridLayerRunner::save_checkpoint() {
  if (!checkpoints_.empty() && checkpoints_.back().position == length_)
    return;
  if (checkpoints_.size() >= max_checkpoints_)
    checkpoints_.erase(checkpoints_.begin());
  checkpoints_.push_back({length_, conv_, ssm_});
}

void HybridLayerRunner::rebuild(int32_t position) {
  dirty_ = true; // until the tokens up to `position` have run again
  while (!checkpoints_.empty() && checkpoints_.back().position > position)
    checkpoints_.pop_back();
  if (checkpoints_.empty()) {
    std::fill(conv_.begin(), conv_.end(), 0.0f);
    std::fill(ssm_.begin(), ssm_.end(), 0.0f);
    length_ = 0;
  } else {
    conv_ = checkpoints_.back().conv;
    ssm_ = checkpoints_.back().ssm;
    length_ = checkpoints_.back().position;
  }
  // Run the tokens from the checkpoint to `position` again (the KV rows they
  // rewrite get the same values).
  while (length_ < position) {
    const int32_t n = std::min(config_.n_batch, position - length_);
    projection_.embed(std::span(tokens_).subspan(static_cast<size_t>(length_), n), x_.data());
    run_layers(n, nullptr);
    length_ += n;
  }
  dirty_ = false;
}

void HybridLayerRunner::truncate(int32_t n_keep) {
  if (n_keep >= length_ && !dirty_)
    return;
  const int32_t keep = std::min(n_keep, length_);
  rebuild(keep);
  tokens_.resize(static_cast<size_t>(keep));
}

bool HybridLayerRunner::run_step(std::span<const int32_t> tokens, const StepOutputs &outputs,
                                 const std::atomic<bool> &cancel) {
  const auto n_tokens = static_cast<int32_t>(tokens.size());
  check_step_fits(config_, n_tokens, length_);
  if (dirty_) // an earlier step failed part-way (a plugin error)
    rebuild(length_);
  if (outputs.may_cut_back)
    save_checkpoint();
  projection_.embed(tokens, x_.data());
  dirty_ = true;
  if (!run_layers(n_tokens, &cancel)) {
    // Some layers' recurrent state moved on: put it back where the cache ends.
    rebuild(length_);
    return false;
  }
  dirty_ = false;
  if (outputs.hidden != nullptr)
    projection_.final_norm(x_.data(), n_tokens, outputs.hidden);
  if (outputs.count > 0)
    projection_.lm_head(x_.data(), outputs);
  length_ += n_tokens;
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  maybe_checkpoint(n_tokens, outputs.may_cut_back);
  return true;
}

} // namespace bonsai::host
