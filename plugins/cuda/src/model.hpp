#pragma once
// A bound Qwen3 model: resolved weight handles, f32 norm vectors, the
// activation buffers for max_batch tokens, the KV cache for max_context
// positions and the captured decode graph.
#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "device.hpp"
#include "kernels.hpp"
#include "weight.hpp"

namespace bonsai::cuda {

struct LayerBinding {
  const Weight *wq, *wk, *wv, *wo, *w_gate, *w_up, *w_down;
  CUdeviceptr attn_norm, q_norm, k_norm, ffn_norm; // f32 vectors
  CUdeviceptr k_cache, v_cache;                    // [n_head_kv][max_context][head_dim] f32
};

struct ModelDims {
  int n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
  float rms_eps = 0, rope_freq_base = 0;
  float rope_magnitude = 1.0f; // factor on RoPE's cos and sin
};

// Device buffers a step writes; sized once at bind for max_batch tokens.
struct Activations {
  DeviceBuffer x, h, q, k, v, attn, ff; // f32 rows of n_tokens
  DeviceBuffer part_ml, part_acc;       // split-K attention partials
  DeviceBuffer logits;                  // kLogitRows x n_vocab
  DeviceBuffer token_ids;               // max_batch int32
  DeviceBuffer step_info;               // int32 {kv_length, n_tokens}
  DeviceBuffer argmax;                  // kLogitRows int32
  DeviceBuffer kv_cache;                // all layers' keys then values
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
  int n_splits = 1;    // split-K attention splits (grid z)
  int split_chunk = 1; // keys per split
  int kv_length = 0;
  StepGraph decode_graph; // single-token step: embedding + every layer
};

struct BindLimits {
  int max_context = 0;
  int max_batch = 0;
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
