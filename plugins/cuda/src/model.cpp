#include "model.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "bonsai/plugin/abi_checks.hpp"
#include "bonsai/plugin/rope_rates.hpp"
#include "launch.hpp"
#include "model_binder.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

// Attention splits: one per 256 positions the context holds, at most 16
// (the keys cached at a step are then shared out evenly among them).
constexpr int kSplitChunk = 256;
constexpr int kMaxSplits = 16;

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

// A device buffer of at least one float (a kind the model lacks leaves a
// size of 0, which cuMemAlloc refuses).
DeviceBuffer float_buffer(const Device &device, int64_t n, const char *what) {
  return DeviceBuffer(device, floats(std::max<int64_t>(n, 1)), what);
}

} // namespace

const Weight &ModelBinder::matrix(const bonsai_weight *handle, const std::string &what,
                                  int64_t rows, int64_t cols) {
  if (handle == nullptr)
    fail_invalid(strformat("%s: %s is NULL", call, what.c_str()));
  const Weight *w = find(handle);
  if (w == nullptr)
    fail_invalid(strformat("%s: %s is not a weight of this context", call, what.c_str()));
  if (w->rows != rows || w->cols != cols)
    fail_invalid(strformat("%s: %s %s is %lld x %lld, expected %lld x %lld", call, what.c_str(),
                           w->label().c_str(), static_cast<long long>(w->rows),
                           static_cast<long long>(w->cols), static_cast<long long>(rows),
                           static_cast<long long>(cols)));
  model.used.insert(w);
  return *w;
}

CUdeviceptr ModelBinder::floats(const bonsai_weight *handle, const std::string &what, int64_t rows,
                                int64_t cols) {
  const Weight &w = matrix(handle, what, rows, cols);
  if (w.layout.type == 0 || dry_run)
    return w.data.get();
  DeviceBuffer f32(device, static_cast<size_t>(rows * cols) * sizeof(float), "f32 copy of " + what);
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  for (size_t r = 0; r < ids.size(); ++r)
    ids[r] = static_cast<int32_t>(r);
  DeviceBuffer row_ids(device, ids.size() * sizeof(int32_t), "row ids");
  device.upload(row_ids.get(), ids.data(), ids.size() * sizeof(int32_t));
  launch_get_rows(device, kernels, w, row_ids.get(), f32.get(), static_cast<int>(rows));
  device.synchronize(); // `ids` and `row_ids` go out of scope
  model.norm_copies.push_back(std::move(f32));
  return model.norm_copies.back().get();
}

void set_attention_splits(BoundModel &m) {
  m.n_splits = std::clamp((m.max_context + kSplitChunk - 1) / kSplitChunk, 1, kMaxSplits);
}

void allocate_activations(const Device &device, BoundModel &m) {
  const ModelDims &d = m.dims;
  const int64_t b = m.max_batch;
  const int64_t q_width = int64_t{d.n_head} * d.head_dim;
  const int64_t kv_width = int64_t{d.n_head_kv} * d.head_dim;
  const plugin::DeltaNetDims &g = d.delta_net;
  Activations &a = m.act;
  a.x = float_buffer(device, b * d.n_embd, "hidden state");
  a.h = float_buffer(device, b * d.n_embd, "normed hidden state");
  a.q = float_buffer(device, b * q_width, "queries");
  a.k = float_buffer(device, b * kv_width, "keys");
  a.v = float_buffer(device, b * kv_width, "values");
  a.attn = float_buffer(device, b * q_width, "attention output");
  a.ff = float_buffer(device, b * d.n_ff, "MLP activations");
  const int64_t widest_input =
      std::max({int64_t{d.n_embd}, q_width, int64_t{d.n_ff}, g.value_dim()});
  // Up to max_batch quantized rows: the int8 GEMVs' (up to 8 tokens), the int8
  // prefill GEMMs' and the LM head's.
  a.int8_input = DeviceBuffer(
      device, static_cast<size_t>(int8_staging_bytes(widest_input) * b) + 16, "int8 matmul input");
  const int64_t partials = b * d.n_head * m.n_splits;
  a.part_ml = float_buffer(device, 2 * partials, "attention split statistics");
  a.part_acc = float_buffer(device, partials * d.head_dim, "attention split outputs");
  a.logits = DeviceBuffer(device, floats(int64_t{kLogitRows} * d.n_vocab), "logits");
  a.token_ids = DeviceBuffer(device, static_cast<size_t>(b) * sizeof(int32_t), "token ids");
  // One {kv_length, n_tokens} pair per sequence; a step has at most one per token.
  a.step_info = DeviceBuffer(device, 2 * static_cast<size_t>(b) * sizeof(int32_t), "step info");
  a.argmax = DeviceBuffer(device, kLogitRows * sizeof(int32_t), "argmax ids");
  if (m.layered && d.n_kv_layers > 0)
    a.query_gate = float_buffer(device, b * 2 * q_width, "queries and output gates");
  if (d.n_state_layers > 0) {
    a.dn_mix = float_buffer(device, b * g.conv_dim(), "DeltaNet conv input");
    a.dn_act = float_buffer(device, b * g.conv_dim(), "DeltaNet q, k and v");
    a.dn_z = float_buffer(device, b * g.value_dim(), "DeltaNet output gate");
    a.dn_beta = float_buffer(device, b * g.n_v_heads, "DeltaNet write strengths");
    a.dn_decay = float_buffer(device, b * g.n_v_heads, "DeltaNet decays");
    a.dn_out = float_buffer(device, b * g.value_dim(), "DeltaNet output");
  }
  m.slots.set_own(make_kv_slot(device, m));
}

std::unique_ptr<KvSlot> make_kv_slot(const Device &device, const BoundModel &m) {
  const ModelDims &d = m.dims;
  auto slot = std::make_unique<KvSlot>();
  slot->layer_bytes = static_cast<size_t>(d.n_head_kv) * m.max_context * d.head_dim * m.kv_bytes;
  slot->cache = DeviceBuffer(
      device, std::max<size_t>(2 * slot->layer_bytes * static_cast<size_t>(d.n_kv_layers), 4),
      "KV cache");
  RecurrentState &state = slot->recurrent;
  state.n_layers = d.n_state_layers;
  if (!state.empty()) {
    state.device = &device;
    state.layer_floats = d.state_layer_floats();
    for (DeviceBuffer &copy : state.copies)
      copy = DeviceBuffer(device, state.bytes(), "recurrent state");
    state.zero();
  }
  return slot;
}

void RecurrentState::zero() {
  device->zero(data(), bytes());
  device->synchronize(); // a failed clear is this call's error
  position = 0;
}

void KvSlot::cut_back(int32_t n_keep) {
  length = n_keep;
  if (!recurrent.empty() && n_keep == 0)
    recurrent.zero();
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
  d.n_embd = desc.n_embd;
  d.n_layer = desc.n_layer;
  d.n_head = desc.n_head;
  d.n_head_kv = desc.n_head_kv;
  d.head_dim = desc.head_dim;
  d.n_ff = desc.n_ff;
  d.n_vocab = desc.n_vocab;
  d.rms_eps = desc.rms_eps;
  d.rope_freq_base = desc.rope_freq_base;
  d.n_rot = d.head_dim;
  d.n_kv_layers = d.n_layer;
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
  set_attention_splits(*model);

  ModelBinder bind{device, kernels, find, *model, dry_run, "bind_model"};
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
    LayerBinding b;
    b.cache_index = l;
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
