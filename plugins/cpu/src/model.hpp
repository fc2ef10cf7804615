#pragma once
// A bound model: validated dimensions, the weights of every layer, norm
// vectors as f32, the step buffers (sized for max_batch tokens) and the KV
// slots (each sized for max_context positions).
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bonsai/plugin/checkpoint_store.hpp"
#include "bonsai/plugin/rope_rates.hpp"
#include "bonsai/plugin/slot_table.hpp"

#include "bonsai/bonsai_backend.h"
#include "bonsai/core/delta_net.hpp"
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
  // Layered models (ABI 1.2): values of an attention head that RoPE turns
  // (head_dim for qwen3), the layers with a KV cache and those with a
  // recurrent state, and the DeltaNet layers' shape.
  int n_rot = 0;
  int n_kv_layers = 0;
  int n_state_layers = 0;
  DeltaNetShape delta_net;

  int64_t q_dim() const { return int64_t{n_head} * head_dim; }
  int64_t kv_dim() const { return int64_t{n_head_kv} * head_dim; }
  // Floats of one DeltaNet layer's recurrent state: conv window, then states.
  int64_t state_layer_floats() const {
    return delta_net.window_floats() + delta_net.state_floats();
  }
};

// What mixes positions in a layer: qwen3's attention (bind_model) or a kind
// of a layered model.
enum class MixerKind { Attention, GatedAttention, GatedDeltaNet };

// A gated DeltaNet layer's weights; the small float vectors as f32.
struct DeltaNetBinding {
  const Weight *qkv = nullptr;
  const Weight *gate = nullptr;
  const Weight *beta = nullptr;
  const Weight *alpha = nullptr;
  const Weight *out = nullptr;
  std::vector<float> taps; // [conv_dim][K]
  std::vector<float> dt_bias, a, norm;
};

struct LayerBinding {
  MixerKind kind = MixerKind::Attention;
  // Attention kinds: the layer's block of the KV cache; DeltaNet: its block
  // of the recurrent state.
  int cache_index = 0;
  DeltaNetBinding delta_net;  // GatedDeltaNet only
  const Weight *wq = nullptr; // gated: query and gate rows interleaved per head
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
  // Layered models only (empty otherwise).
  std::unique_ptr<float[]> query_gate;   // gated attention's projection [n][2 * q_dim]
  std::unique_ptr<float[]> mix;          // DeltaNet conv input [n][conv_dim], then its output
  std::unique_ptr<float[]> act;          // after conv and SiLU [n][conv_dim]
  std::unique_ptr<float[]> z;            // output gate [n][value_dim]
  std::unique_ptr<float[]> beta;         // [n][n_v_heads]
  std::unique_ptr<float[]> decay;        // [n][n_v_heads]
  std::unique_ptr<float[]> mixed;        // DeltaNet output before ssm_out [n][value_dim]
  std::unique_ptr<float[]> rule_scratch; // [n_v_heads][head_dim] for the parallel heads
  int lm_chunk = 0;
  std::vector<double> rope_cos; // [n][head_dim / 2] of the open step
  std::vector<double> rope_sin;
  ActScratch acts;
};

// A sequence's recurrent state (layered models with DeltaNet layers): for
// each such layer its conv window then its value heads' d x d states. There
// are two copies: a step reads `current` and writes the other, and end_step
// makes that one current, so a step that is never ended changes nothing.
struct RecurrentState {
  std::unique_ptr<float[]> copies[2];
  int current = 0;
  int64_t layer_floats = 0;
  int n_layers = 0;
  // The length the state describes. A cut-back cache leaves it behind (then
  // != the cache's length) until a checkpoint is restored.
  int32_t position = 0;

  bool empty() const { return n_layers == 0; }
  int64_t floats() const { return layer_floats * n_layers; }
  float *data() const { return copies[current].get(); } // the current state, all layers
  float *layer(int copy, int index) const { return copies[copy].get() + index * layer_floats; }
  void zero();
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
  RecurrentState recurrent; // empty for a model without recurrent layers

  // Steps may append to this sequence: its recurrent state is at its length.
  bool state_ready() const { return recurrent.empty() || recurrent.position == length; }
  // Keeps n_keep positions: 0 zeroes the state; 0 < n_keep < length leaves
  // it behind (docs/abi.md, "Layer kinds").
  void cut_back(int32_t n_keep);

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

// Allocates an empty cache of max_context positions for the model's shape
// (its n_kv_layers attention layers), with a zero recurrent state when it has
// DeltaNet layers.
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
  // Saved recurrent states (checkpoint_save), a copy of every layer's each.
  plugin::CheckpointStore<std::unique_ptr<float[]>> checkpoints;
};

// Maps a host handle to a weight of this context (nullptr if it is not one).
using WeightLookup = std::function<const Weight *(const bonsai_weight *)>;

struct BindLimits {
  int max_batch = 1;
  int max_context = 1;
  KvType kv_type = KvType::F32; // the KV cache's element type
  // When set, decides kv_type from the head size once the description has
  // been read (a layered model states it per attention layer).
  std::function<KvType(int head_dim)> kv_type_for_head_dim;
};

// Validates the description (shapes, handles) and allocates everything.
// Throws PluginError; bad_alloc when memory runs out.
std::unique_ptr<BoundModel> bind_model(const bonsai_model_desc &desc, const WeightLookup &lookup,
                                       const BindLimits &limits);

// The step buffers and slot 0 for a model whose dims and layers are set.
void allocate_model(BoundModel &m, const BindLimits &limits);

} // namespace bonsai::cpu
