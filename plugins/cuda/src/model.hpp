#pragma once
// A bound Qwen3 model: resolved weight handles, f32 norm vectors, the
// activation buffers for max_batch tokens, the KV slots (one cache of
// max_context positions each) and the captured decode graph.
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/checkpoint_store.hpp"
#include "bonsai/plugin/layered_desc.hpp"
#include "bonsai/plugin/slot_table.hpp"
#include "device.hpp"
#include "kernels.hpp"
#include "persistent_decode.hpp"
#include "weight.hpp"

namespace bonsai::cuda {

// What mixes positions in a layer: qwen3's attention (bind_model), or a
// layered model's kinds (bind_layered_model, ABI 1.2).
enum class MixerKind { Attention, GatedAttention, GatedDeltaNet };

// A gated DeltaNet layer's weights (bonsai_gated_delta_net_mixer).
struct DeltaNetBinding {
  const Weight *qkv = nullptr, *gate = nullptr, *beta = nullptr, *alpha = nullptr;
  const Weight *out = nullptr;
  CUdeviceptr taps = 0, dt_bias = 0, a = 0, norm = 0; // f32: [C][K], H_v, H_v, d
};

struct LayerBinding {
  MixerKind kind = MixerKind::Attention;
  // The layer's place among the layers of its kind: its KV cache layer
  // (attention kinds) or its recurrent state layer (DeltaNet).
  int cache_index = 0;
  // Attention kinds (wq of gated attention is 2 * n_head * head_dim rows:
  // each head's query, then its output gate).
  const Weight *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr;
  const Weight *w_gate = nullptr, *w_up = nullptr, *w_down = nullptr;
  CUdeviceptr attn_norm = 0, q_norm = 0, k_norm = 0, ffn_norm = 0; // f32 vectors
  DeltaNetBinding delta_net;
};

// One sequence's recurrent state (DeltaNet layers), two copies on the
// device: a step reads `current` and writes the other, and end_step makes
// that one current, so a step never ended changes nothing. A layer's part:
// (K - 1) x C conv inputs, then H_v states of d x d.
struct RecurrentState {
  const Device *device = nullptr;
  DeviceBuffer copies[2];
  int current = 0;
  size_t layer_floats = 0;
  int n_layers = 0;
  // The length the state describes. A cut-back slot leaves it behind (then
  // != the slot's length) until a checkpoint is restored.
  int32_t position = 0;

  bool empty() const { return n_layers == 0; }
  size_t bytes() const { return layer_floats * static_cast<size_t>(n_layers) * sizeof(float); }
  CUdeviceptr data() const { return copies[current].get(); } // all layers
  CUdeviceptr layer(int copy, int index) const {
    return copies[copy].get() + layer_floats * static_cast<size_t>(index) * sizeof(float);
  }
  void zero(); // waits for it; position 0
};

// One KV cache (a slot of the sequences extension; slot 0 is the context's
// own): for each layer its keys then its values, each
// [n_head_kv][max_context][head_dim] of f16 or f32 (BoundModel::kv_bytes).
// For a layered model the layers are its attention layers (cache_index)
// and the slot also holds the sequence's recurrent state.
struct KvSlot {
  DeviceBuffer cache;
  int length = 0;           // positions cached
  size_t layer_bytes = 0;   // bytes of one layer's keys (as of its values)
  RecurrentState recurrent; // empty without DeltaNet layers
  CUdeviceptr keys(int layer) const { return cache.get() + 2 * layer_bytes * layer; }
  CUdeviceptr values(int layer) const { return keys(layer) + layer_bytes; }
  // Steps may append to this sequence: its recurrent state is at its length.
  bool state_ready() const { return recurrent.empty() || recurrent.position == length; }
  // Keeps n_keep positions: 0 zeroes the state; 0 < n_keep < length leaves
  // it behind (docs/abi.md, "Layer kinds").
  void cut_back(int32_t n_keep);
};

struct ModelDims {
  int n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
  float rms_eps = 0, rope_freq_base = 0;
  float rope_magnitude = 1.0f; // factor on RoPE's cos and sin
  int n_rot = 0;               // leading values of a head RoPE turns (head_dim for qwen3)
  int n_kv_layers = 0;         // layers with a KV cache (all of qwen3's)
  int n_state_layers = 0;      // DeltaNet layers
  plugin::DeltaNetDims delta_net;
  // Floats of one DeltaNet layer's recurrent state.
  size_t state_layer_floats() const {
    const auto &g = delta_net;
    return static_cast<size_t>(g.conv_kernel - 1) * g.conv_dim() +
           static_cast<size_t>(g.n_v_heads) * g.head_dim * g.head_dim;
  }
};

// Device buffers a step writes; sized once at bind for max_batch tokens.
struct Activations {
  DeviceBuffer x, h, q, k, v, attn, ff; // f32 rows of n_tokens
  DeviceBuffer int8_input;              // input rows quantized for the int8 matmuls
  DeviceBuffer part_ml, part_acc;       // split-K attention partials
  DeviceBuffer logits;                  // kLogitRows x n_vocab
  DeviceBuffer token_ids;               // max_batch int32
  DeviceBuffer step_info;               // int32 {kv_length, n_tokens} per sequence of the step
  DeviceBuffer argmax;                  // kLogitRows int32
  // Layered models only: gated attention's query projection (each head's
  // query then its gate), and the DeltaNet layers' rows: the qkv projection,
  // the conv's output, z, the gates and the rule's output.
  DeviceBuffer query_gate;
  DeviceBuffer dn_mix, dn_act, dn_z, dn_beta, dn_decay, dn_out;
};

// A captured CUDA graph and its executable instance.
class StepGraph {
public:
  explicit StepGraph(const DriverApi &api) : api_(api) {}
  ~StepGraph() { reset(); }
  StepGraph(const StepGraph &) = delete;
  StepGraph &operator=(const StepGraph &) = delete;
  bool ready() const { return exec_ != nullptr; }
  void set(CUgraph graph, CUgraphExec exec);
  CUgraphExec exec() const { return exec_; }
  void reset();

private:
  const DriverApi &api_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

inline constexpr int kLogitRows = 16; // LM head rows projected per launch

struct BoundModel {
  explicit BoundModel(const DriverApi &api) : decode_graph(api) {}
  ModelDims dims;
  const Weight *token_embd = nullptr;
  const Weight *lm_head = nullptr;
  CUdeviceptr output_norm = 0;
  std::vector<LayerBinding> layers;
  std::set<const Weight *> used;         // handles free_weight must refuse
  std::vector<DeviceBuffer> norm_copies; // f32 copies of non-F32 norm vectors
  DeviceBuffer rope_rates;               // head_dim / 2 doubles: pair i turns pos * rate[i]
  Activations act;
  int max_context = 0;
  int max_batch = 0;
  // Split-K attention splits (grid z); each step shares its keys out among
  // them (kernels/layer.cuh, attention_slice).
  int n_splits = 1;
  int kv_bytes = 4; // bytes per KV cache element: 2 (f16) or 4 (f32)
  // KV slots by id: slot 0 (the context's own cache) always exists.
  plugin::SlotTable<KvSlot> slots;
  StepGraph decode_graph; // single-token step of slot 0: embedding + every layer
  // decode=persistent (persistent_step.hpp): set up at the first step;
  // persistent_off once it was found not to apply or a launch stalled.
  std::unique_ptr<PersistentDecode> persistent;
  bool persistent_off = false;
  bool tune_note_logged = false; // the tuner said once why it has nothing to tune
  bool layered = false;          // bound with bind_layered_model (ABI 1.2 layer kinds)
  // Saved recurrent states (checkpoint_save), in device memory.
  plugin::CheckpointStore<DeviceBuffer> checkpoints;
};

// An empty KV slot of the model's shape; OUT_OF_MEMORY names it.
std::unique_ptr<KvSlot> make_kv_slot(const Device &device, const BoundModel &m);

struct BindLimits {
  int max_context = 0;
  int max_batch = 0;
  bool kv_f16 = false; // the KV cache in f16 instead of f32
};

using WeightLookup = std::function<const Weight *(const bonsai_weight *)>;

// Validates the description against the uploaded weights without
// allocating anything. Throws PluginError (INVALID_ARGUMENT for bad shapes or
// handles, UNSUPPORTED for type combinations without kernels).
void validate_model(const Device &device, const Kernels &kernels, const bonsai_model_desc &desc,
                    const WeightLookup &find, const BindLimits &limits);

// Validates and allocates everything. Throws PluginError as validate_model,
// and OUT_OF_MEMORY naming the buffer and the bytes needed.
std::unique_ptr<BoundModel> bind_model(const Device &device, const Kernels &kernels,
                                       const bonsai_model_desc &desc, const WeightLookup &find,
                                       const BindLimits &limits);

// The same for a layered model (layered_model.cpp).
void validate_layered_model(const Device &device, const Kernels &kernels,
                            const bonsai_layered_model_desc &desc, const WeightLookup &find,
                            const BindLimits &limits);
std::unique_ptr<BoundModel> bind_layered_model(const Device &device, const Kernels &kernels,
                                               const bonsai_layered_model_desc &desc,
                                               const WeightLookup &find, const BindLimits &limits);

} // namespace bonsai::cuda
