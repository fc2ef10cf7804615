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
#include "bonsai/plugin/slot_table.hpp"
#include "device.hpp"
#include "kernels.hpp"
#include "persistent_decode.hpp"
#include "weight.hpp"

namespace bonsai::cuda {

struct LayerBinding {
  const Weight *wq, *wk, *wv, *wo, *w_gate, *w_up, *w_down;
  CUdeviceptr attn_norm, q_norm, k_norm, ffn_norm; // f32 vectors
};

// One KV cache (a slot of the sequences extension; slot 0 is the context's
// own): for each layer its keys then its values, each
// [n_head_kv][max_context][head_dim] of f16 or f32 (BoundModel::kv_bytes).
struct KvSlot {
  DeviceBuffer cache;
  int length = 0;         // positions cached
  size_t layer_bytes = 0; // bytes of one layer's keys (as of its values)
  CUdeviceptr keys(int layer) const { return cache.get() + 2 * layer_bytes * layer; }
  CUdeviceptr values(int layer) const { return keys(layer) + layer_bytes; }
};

struct ModelDims {
  int n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
  float rms_eps = 0, rope_freq_base = 0;
  float rope_magnitude = 1.0f; // factor on RoPE's cos and sin
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

} // namespace bonsai::cuda
