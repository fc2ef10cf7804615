#pragma once
// qwen35's multi-token-prediction (MTP) layer on the host in f32, its
// projections and head through a plugin's matmul (docs/models.md, "The MTP
// layer"). An entry at position p reads the token t_p and a hidden state h
// (the trunk's output-normed state at p - 1, or the previous entry's output
// when chained) and predicts the token after t_p:
//   c = eh_proj [RMSNorm(e(t_p); enorm) ; RMSNorm(h; hnorm)]
//   c += gated attention(RMSNorm(c)) over the layer's own entries
//   c += MLP(RMSNorm(c)); out = RMSNorm(c; head norm); logits = head out.
// Its KV cache holds the entries in order; each keeps its RoPE position, so
// a position may be missing (an entry that could not be made) without
// harm.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "bonsai/binding/model_binding.hpp"
#include "bonsai/bonsai_backend.h"
#include "bonsai/core/model_spec.hpp"
#include "model/gated_attention.hpp"

namespace bonsai::host {

using binding::MtpHandles;

// y (n x rows) = W x (n x cols), through the plugin.
using MtpMatmul =
    std::function<void(const bonsai_weight *weight, int32_t n_tokens, const float *x, float *y)>;

struct MtpLayerConfig {
  int32_t max_entries = 0; // KV capacity (the context window)
  int32_t n_batch = 0;     // most entries one run() takes
};

// Entries to add, in increasing positions past every entry held.
struct MtpEntries {
  std::span<const int32_t> tokens;    // t_p of each
  std::span<const int32_t> positions; // p of each
  const float *hidden = nullptr;      // n x n_embd: the h each reads
  // For the last n_logits entries: their output-normed states (the h a
  // chained entry reads; n_logits x n_embd, or NULL) and their logits
  // (n_logits x n_vocab).
  int32_t n_logits = 0;
  float *out_hidden = nullptr;
  float *logits = nullptr;
};

class MtpLayer {
public:
  // `spec` and `weights` (views into the mapped file) outlive this.
  MtpLayer(const ModelSpec &spec, const MtpWeights &weights, const MtpHandles &handles,
           MtpMatmul matmul, const MtpLayerConfig &config);

  // Adds entries (1..n_batch, room for them in the cache; else Error).
  void run(const MtpEntries &entries);
  // Keeps the first n entries.
  void truncate(int32_t n);
  // Holds the first n entries of `other` (a layer of the same model) instead
  // of its own.
  void copy_prefix_of(const MtpLayer &other, int32_t n);
  int32_t size() const { return static_cast<int32_t>(positions_.size()); }
  // The RoPE position of entry i.
  int32_t position(int32_t i) const { return positions_[static_cast<size_t>(i)]; }
  int32_t capacity() const { return config_.max_entries; }
  int32_t n_batch() const { return config_.n_batch; }
  int32_t n_embd() const { return n_embd_; }
  int32_t n_vocab() const { return n_vocab_; }

private:
  void embed(int32_t token, float *out) const;
  void mlp(int32_t n);

  const TensorView &embedding_;
  MtpHandles handles_;
  MtpMatmul matmul_;
  MtpLayerConfig config_;
  int32_t n_embd_ = 0, n_ff_ = 0, n_vocab_ = 0, q_dim_ = 0, kv_dim_ = 0;
  float eps_ = 0;
  std::vector<float> enorm_, hnorm_, attn_norm_, q_norm_, k_norm_, ffn_norm_, head_norm_;
  std::vector<double> rope_rates_;
  GatedAttentionShape shape_;

  std::vector<float> k_cache_, v_cache_; // [entry][kv_dim]
  std::vector<int32_t> positions_;       // of each entry held

  // Scratch for n_batch entries.
  std::vector<float> both_, x_, h_, qg_, q_, k_, v_, attn_, proj_, gate_, up_, scores_;
};

} // namespace bonsai::host
