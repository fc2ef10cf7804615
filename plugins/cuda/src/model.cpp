#include "model.hpp"

#include <algorithm>
#include <cstring>

#include "bonsai/plugin/abi_checks.hpp"
#include "bonsai/plugin/rope_rates.hpp"
#include "launch.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

// Attention splits: one per 256 positions the context holds, at most 16
// (the keys cached at a step are then shared out evenly among them).
constexpr int kSplitChunk = 256;
constexpr int kMaxSplits = 16;

struct Binder {
  const Device &device;
  const Kernels &kernels;
  const WeightLookup &find;
  BoundModel &model;
  bool dry_run; // validate only: no device memory is touched

  const Weight &matrix(const bonsai_weight *handle, const char *what, int64_t rows, int64_t cols) {
    const Weight *w = find(handle);
    if (w == nullptr)
      fail_invalid(strformat("bind_model: %s is not a weight of this context", what));
    if (w->rows != rows || w->cols != cols)
      fail_invalid(strformat("bind_model: %s %s is %lld x %lld, expected %lld x %lld", what,
                             w->label().c_str(), static_cast<long long>(w->rows),
                             static_cast<long long>(w->cols), static_cast<long long>(rows),
                             static_cast<long long>(cols)));
    model.used.insert(w);
    return *w;
  }

  // A norm vector as f32 on the device: F32 weights are used in place,
  // other types are decoded once with the embedding-lookup kernel (row 0).
  CUdeviceptr vector(const bonsai_weight *handle, const char *what, int64_t n) {
    const Weight &w = matrix(handle, what, 1, n);
    if (w.layout.type == 0 || dry_run)
      return w.data.get();
    DeviceBuffer f32(device, static_cast<size_t>(n) * sizeof(float),
                     std::string("f32 copy of ") + what);
    DeviceBuffer zero_id(device, sizeof(int32_t), "row id");
    const int32_t id = 0;
    device.upload(zero_id.get(), &id, sizeof id);
    launch_get_rows(device, kernels, w, zero_id.get(), f32.get(), 1);
    device.synchronize();
    model.norm_copies.push_back(std::move(f32));
    return model.norm_copies.back().get();
  }
};

// The shared checks, plus this plugin's own limit on head_dim (the
// attention kernels' per-head shared arrays).
void check_dims(const bonsai_model_desc &d) {
  check_model_desc(d);
  if (d.head_dim > 1024)
    fail_invalid(strformat("bind_model: head_dim %d is above this plugin's 1024", d.head_dim));
}

size_t floats(int64_t n) {
  return static_cast<size_t>(n) * sizeof(float);
}

void allocate_activations(const Device &device, BoundModel &m) {
  const ModelDims &d = m.dims;
  const int64_t b = m.max_batch;
  Activations &a = m.act;
  a.x = DeviceBuffer(device, floats(b * d.n_embd), "hidden state");
  a.h = DeviceBuffer(device, floats(b * d.n_embd), "normed hidden state");
  a.q = DeviceBuffer(device, floats(b * d.n_head * d.head_dim), "queries");
  a.k = DeviceBuffer(device, floats(b * d.n_head_kv * d.head_dim), "keys");
  a.v = DeviceBuffer(device, floats(b * d.n_head_kv * d.head_dim), "values");
  a.attn = DeviceBuffer(device, floats(b * d.n_head * d.head_dim), "attention output");
  a.ff = DeviceBuffer(device, floats(b * d.n_ff), "MLP activations");
  const int64_t widest_input =
      std::max({int64_t{d.n_embd}, int64_t{d.n_head} * d.head_dim, int64_t{d.n_ff}});
  // Up to max_batch quantized rows: the int8 GEMVs' (up to 8 tokens), the int8
  // prefill GEMMs' and the LM head's.
  a.int8_input = DeviceBuffer(
      device, static_cast<size_t>(int8_staging_bytes(widest_input) * b) + 16, "int8 matmul input");
  const int64_t partials = b * d.n_head * m.n_splits;
  a.part_ml = DeviceBuffer(device, floats(2 * partials), "attention split statistics");
  a.part_acc = DeviceBuffer(device, floats(partials * d.head_dim), "attention split outputs");
  a.logits = DeviceBuffer(device, floats(int64_t{kLogitRows} * d.n_vocab), "logits");
  a.token_ids = DeviceBuffer(device, static_cast<size_t>(b) * sizeof(int32_t), "token ids");
  // One {kv_length, n_tokens} pair per sequence; a step has at most one per token.
  a.step_info = DeviceBuffer(device, 2 * static_cast<size_t>(b) * sizeof(int32_t), "step info");
  a.argmax = DeviceBuffer(device, kLogitRows * sizeof(int32_t), "argmax ids");
  m.slots.set_own(make_kv_slot(device, m));
}

} // namespace

std::unique_ptr<KvSlot> make_kv_slot(const Device &device, const BoundModel &m) {
  const ModelDims &d = m.dims;
  auto slot = std::make_unique<KvSlot>();
  slot->layer_bytes = static_cast<size_t>(d.n_head_kv) * m.max_context * d.head_dim * m.kv_bytes;
  slot->cache = DeviceBuffer(device, 2 * slot->layer_bytes * d.n_layer, "KV cache");
  return slot;
}

void StepGraph::set(CUgraph graph, CUgraphExec exec) {
  reset();
  graph_ = graph;
  exec_ = exec;
}

void StepGraph::reset() {
  if (exec_ != nullptr)
    api_.cuGraphExecDestroy(exec_);
  if (graph_ != nullptr)
    api_.cuGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

namespace {

std::unique_ptr<BoundModel> resolve_model(const Device &device, const Kernels &kernels,
                                          const bonsai_model_desc &desc, const WeightLookup &find,
                                          const BindLimits &limits, bool dry_run) {
  check_dims(desc);
  auto model = std::make_unique<BoundModel>(device.api());
  ModelDims &d = model->dims;
  d = {desc.n_embd, desc.n_layer, desc.n_head,  desc.n_head_kv,     desc.head_dim,
       desc.n_ff,   desc.n_vocab, desc.rms_eps, desc.rope_freq_base};
  const plugin::RopeRates rope = plugin::read_rope_rates(desc);
  d.rope_magnitude = static_cast<float>(rope.magnitude);
  if (!dry_run) {
    const size_t bytes = rope.inv_freq.size() * sizeof(double);
    model->rope_rates = DeviceBuffer(device, bytes, "RoPE rates");
    device.upload(model->rope_rates.get(), rope.inv_freq.data(), bytes);
  }
  model->max_context = limits.max_context;
  model->max_batch = limits.max_batch;
  model->kv_bytes = limits.kv_f16 ? 2 : 4;
  model->n_splits = std::clamp((limits.max_context + kSplitChunk - 1) / kSplitChunk, 1, kMaxSplits);

  Binder bind{device, kernels, find, *model, dry_run};
  const int64_t q_rows = int64_t{d.n_head} * d.head_dim;
  const int64_t kv_rows = int64_t{d.n_head_kv} * d.head_dim;
  model->token_embd = &bind.matrix(desc.token_embd, "token_embd", d.n_vocab, d.n_embd);
  model->lm_head = &bind.matrix(desc.lm_head, "lm_head", d.n_vocab, d.n_embd);
  model->output_norm = bind.vector(desc.output_norm, "output_norm", d.n_embd);

  const auto *entry = reinterpret_cast<const unsigned char *>(desc.layers);
  const uint32_t stride = desc.layers[0].struct_size;
  for (int l = 0; l < d.n_layer; ++l) {
    bonsai_layer_weights lw;
    std::memcpy(&lw, entry + static_cast<size_t>(stride) * l, sizeof lw);
    if (lw.struct_size != stride)
      fail_invalid(strformat("bind_model: layers[%d].struct_size is %u, layers[0]'s is %u", l,
                             lw.struct_size, stride));
    LayerBinding b{};
    const std::string prefix = strformat("layer %d ", l);
    auto name = [&prefix](const char *what) { return prefix + what; };
    b.wq = &bind.matrix(lw.wq, name("wq").c_str(), q_rows, d.n_embd);
    b.wk = &bind.matrix(lw.wk, name("wk").c_str(), kv_rows, d.n_embd);
    b.wv = &bind.matrix(lw.wv, name("wv").c_str(), kv_rows, d.n_embd);
    b.wo = &bind.matrix(lw.wo, name("wo").c_str(), d.n_embd, q_rows);
    b.w_gate = &bind.matrix(lw.w_gate, name("w_gate").c_str(), d.n_ff, d.n_embd);
    b.w_up = &bind.matrix(lw.w_up, name("w_up").c_str(), d.n_ff, d.n_embd);
    b.w_down = &bind.matrix(lw.w_down, name("w_down").c_str(), d.n_embd, d.n_ff);
    if (b.w_gate->layout.type != b.w_up->layout.type)
      fail(BONSAI_ERR_UNSUPPORTED,
           strformat("bind_model: layer %d gate and up projections have different types (%u, "
                     "%u); the fused SwiGLU kernel needs one type",
                     l, b.w_gate->layout.type, b.w_up->layout.type));
    b.attn_norm = bind.vector(lw.attn_norm, name("attn_norm").c_str(), d.n_embd);
    b.q_norm = bind.vector(lw.q_norm, name("q_norm").c_str(), d.head_dim);
    b.k_norm = bind.vector(lw.k_norm, name("k_norm").c_str(), d.head_dim);
    b.ffn_norm = bind.vector(lw.ffn_norm, name("ffn_norm").c_str(), d.n_embd);
    model->layers.push_back(b);
  }
  if (!dry_run)
    allocate_activations(device, *model);
  return model;
}

} // namespace

void validate_model(const Device &device, const Kernels &kernels, const bonsai_model_desc &desc,
                    const WeightLookup &find, const BindLimits &limits) {
  resolve_model(device, kernels, desc, find, limits, true);
}

std::unique_ptr<BoundModel> bind_model(const Device &device, const Kernels &kernels,
                                       const bonsai_model_desc &desc, const WeightLookup &find,
                                       const BindLimits &limits) {
  return resolve_model(device, kernels, desc, find, limits, false);
}

} // namespace bonsai::cuda
