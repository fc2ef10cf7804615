#pragma once
// A bound model: validated dimensions, the weights of every layer, norm
// vectors as f32, the step buffers (sized for max_batch tokens) and the KV
// slots (each sized for max_context positions).
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_set>
#include <vector>

#include "bonsai/plugin/rope_rates.hpp"
#include "bonsai/plugin/slot_table.hpp"

#include "bonsai/bonsai_backend.h"
#include "matmul.hpp"
#include "weight.hpp"

namespace bonsai::cpu {

struct ModelDims {
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_ff = 0;
  int n_vocab = 0;
  float rms_eps = 0.0f;
  float rope_freq_base = 0.0f;
  plugin::RopeRates rope; // per-pair angle rates and magnitude (plain or the host's scaled ones)

  int64_t q_dim() const { return int64_t{n_head} * head_dim; }
  int64_t kv_dim() const { return int64_t{n_head_kv} * head_dim; }
};

struct LayerBinding {
  const Weight *wq = nullptr;
  const Weight *wk = nullptr;
  const Weight *wv = nullptr;
  const Weight *wo = nullptr;
  const Weight *w_gate = nullptr;
  const Weight *w_up = nullptr;
  const Weight *w_down = nullptr;
  std::vector<float> attn_norm; // n_embd
  std::vector<float> q_norm;    // head_dim
  std::vector<float> k_norm;    // head_dim
  std::vector<float> ffn_norm;  // n_embd
};

// Activations of the open step; every buffer holds max_batch token rows.
struct StepBuffers {
  std::unique_ptr<float[]> x;         // residual stream [n][n_embd]
  std::unique_ptr<float[]> h;         // normed input / matmul output [n][n_embd]
  std::unique_ptr<float[]> q;         // [n][q_dim]
  std::unique_ptr<float[]> k_new;     // this step's keys [n][kv_dim], before they go to their slots
  std::unique_ptr<float[]> v_new;     // this step's values [n][kv_dim]
  std::unique_ptr<float[]> attn;      // attention output [n][q_dim]
  std::unique_ptr<float[]> ffn;       // silu(gate) * up [n][n_ff]
  std::unique_ptr<float[]> scores;    // [n_head][kMaxQueries][max_context]
  std::unique_ptr<double[]> head_acc; // [n_head][head_dim], exact attention only
  std::unique_ptr<float[]> lm_logits; // [lm_chunk][n_vocab] for argmax-only LM head
  int lm_chunk = 0;
  std::vector<double> rope_cos; // [n][head_dim / 2] of the open step
  std::vector<double> rope_sin;
  ActScratch acts;
};

// Keys and values of every layer, [layer][kv_head][position][head_dim] of
// `type`: one head's keys are one contiguous stream, which is how attention
// reads them (the hardware prefetcher follows it; rows a kv_dim apart it did not).
struct KvCache {
  std::unique_ptr<uint8_t[]> k;
  std::unique_ptr<uint8_t[]> v;
  KvType type = KvType::F32;
  int n_head_kv = 0;
  int head_dim = 0;
  int max_context = 0;
  int32_t length = 0;

  // Position `pos` of KV head `head` in `layer`.
  uint8_t *k_at(int layer, int head, int64_t pos) const {
    return k.get() + offset(layer, head, pos);
  }
  uint8_t *v_at(int layer, int head, int64_t pos) const {
    return v.get() + offset(layer, head, pos);
  }
  size_t offset(int layer, int head, int64_t pos) const {
    const int64_t row = (static_cast<int64_t>(layer) * n_head_kv + head) * max_context + pos;
    return static_cast<size_t>(row) * position_bytes();
  }
  size_t position_bytes() const { return static_cast<size_t>(head_dim) * kv_type_bytes(type); }
};

// Allocates an empty cache of max_context positions for the model's shape.
// Throws PluginError (OUT_OF_MEMORY) when its size overflows; bad_alloc.
std::unique_ptr<KvCache> make_kv_cache(const ModelDims &dims, int max_context, KvType type);

struct BoundModel {
  ModelDims dims;
  int max_context = 0;
  const Weight *token_embd = nullptr;
  const Weight *lm_head = nullptr;
  std::vector<float> output_norm;
  std::vector<LayerBinding> layers;
  std::unordered_set<const Weight *> used; // free_weight refuses these
  StepBuffers buffers;
  // KV slots by id: slot 0 (the context's own cache) always exists.
  plugin::SlotTable<KvCache> slots;
};

// Maps a host handle to a weight of this context (nullptr if it is not one).
using WeightLookup = std::function<const Weight *(const bonsai_weight *)>;

struct BindLimits {
  int max_batch = 1;
  int max_context = 1;
  KvType kv_type = KvType::F32; // the KV cache's element type
};

// Validates the description (shapes, handles) and allocates everything.
// Throws PluginError; bad_alloc when memory runs out.
std::unique_ptr<BoundModel> bind_model(const bonsai_model_desc &desc, const WeightLookup &lookup,
                                       const BindLimits &limits);

} // namespace bonsai::cpu
