#include "model.hpp"

#include "bonsai/plugin/abi_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "bonsai/plugin/rope_rates.hpp"
#include "plugin_error.hpp"
#include "weight_binder.hpp"

namespace bonsai::cpu {
namespace {

ModelDims check_dims(const bonsai_model_desc &desc) {
  check_model_desc(desc);
  ModelDims d;
  d.n_embd = desc.n_embd;
  d.n_layer = desc.n_layer;
  d.n_head = desc.n_head;
  d.n_head_kv = desc.n_head_kv;
  d.head_dim = desc.head_dim;
  d.n_ff = desc.n_ff;
  d.n_vocab = desc.n_vocab;
  d.rms_eps = desc.rms_eps;
  d.rope_freq_base = desc.rope_freq_base;
  d.rope = read_rope_rates(desc);
  d.n_rot = d.head_dim;
  d.n_kv_layers = d.n_layer;
  return d;
}

// Element i of the layers array. The host's struct may be larger than ours
// (a later minor version), so the stride is the struct_size the host wrote.
bonsai_layer_weights read_layer(const bonsai_model_desc &desc, int i) {
  const uint32_t stride = desc.layers[0].struct_size;
  if (stride < sizeof(bonsai_layer_weights))
    fail_invalid(strformat("bind_model: layers[0].struct_size is %u, smaller than the %zu bytes "
                           "of ABI 1.0",
                           stride, sizeof(bonsai_layer_weights)));
  const auto *element =
      reinterpret_cast<const unsigned char *>(desc.layers) + static_cast<size_t>(i) * stride;
  bonsai_layer_weights layer;
  std::memcpy(&layer, element, sizeof(layer));
  if (layer.struct_size != stride)
    fail_invalid(strformat("bind_model: layers[%d].struct_size is %u but layers[0] has %u", i,
                           layer.struct_size, stride));
  return layer;
}

LayerBinding bind_layer(const bonsai_layer_weights &lw, int i, const ModelDims &d, Binder &binder) {
  const auto field = [i](const char *name) { return strformat("layers[%d].%s", i, name); };
  LayerBinding l;
  l.cache_index = i;
  l.attn_norm = binder.vector(lw.attn_norm, field("attn_norm"), d.n_embd);
  l.wq = &binder.matrix(lw.wq, field("wq"), d.q_dim(), d.n_embd);
  l.wk = &binder.matrix(lw.wk, field("wk"), d.kv_dim(), d.n_embd);
  l.wv = &binder.matrix(lw.wv, field("wv"), d.kv_dim(), d.n_embd);
  l.q_norm = binder.vector(lw.q_norm, field("q_norm"), d.head_dim);
  l.k_norm = binder.vector(lw.k_norm, field("k_norm"), d.head_dim);
  l.wo = &binder.matrix(lw.wo, field("wo"), d.n_embd, d.q_dim());
  l.ffn_norm = binder.vector(lw.ffn_norm, field("ffn_norm"), d.n_embd);
  l.w_gate = &binder.matrix(lw.w_gate, field("w_gate"), d.n_ff, d.n_embd);
  l.w_up = &binder.matrix(lw.w_up, field("w_up"), d.n_ff, d.n_embd);
  l.w_down = &binder.matrix(lw.w_down, field("w_down"), d.n_embd, d.n_ff);
  if (l.w_gate->type != l.w_up->type)
    fail_invalid(strformat("bind_model: layers[%d] w_gate and w_up must have the same type", i));
  return l;
}

template <class T> std::unique_ptr<T[]> uninitialized(int64_t n) {
  return std::make_unique_for_overwrite<T[]>(static_cast<size_t>(n));
}

} // namespace

void allocate_model(BoundModel &m, const BindLimits &limits) {
  const ModelDims &d = m.dims;
  const int64_t batch = limits.max_batch;
  StepBuffers &b = m.buffers;
  b.x = uninitialized<float>(batch * d.n_embd);
  b.h = uninitialized<float>(batch * d.n_embd);
  b.q = uninitialized<float>(batch * d.q_dim());
  b.attn = uninitialized<float>(batch * d.q_dim());
  b.ffn = uninitialized<float>(batch * d.n_ff);
  b.scores = uninitialized<float>(int64_t{d.n_head} * kMaxQueries * limits.max_context);
  b.head_acc = uninitialized<double>(d.q_dim());
  b.lm_chunk = std::min(limits.max_batch, 8);
  b.lm_logits = uninitialized<float>(int64_t{b.lm_chunk} * d.n_vocab);
  b.rope_cos.reserve(static_cast<size_t>(batch * (d.head_dim / 2)));
  b.rope_sin.reserve(static_cast<size_t>(batch * (d.head_dim / 2)));
  const DeltaNetShape &g = d.delta_net;
  if (d.n_state_layers > 0) {
    b.mix = uninitialized<float>(batch * g.conv_dim());
    b.act = uninitialized<float>(batch * g.conv_dim());
    b.z = uninitialized<float>(batch * g.value_dim());
    b.beta = uninitialized<float>(batch * g.n_v_heads);
    b.decay = uninitialized<float>(batch * g.n_v_heads);
    b.mixed = uninitialized<float>(batch * g.value_dim());
    b.rule_scratch = uninitialized<float>(int64_t{g.value_dim()});
  }
  if (std::any_of(m.layers.begin(), m.layers.end(),
                  [](const LayerBinding &l) { return l.kind == MixerKind::GatedAttention; }))
    b.query_gate = uninitialized<float>(batch * 2 * d.q_dim());
  // Reserve the quantized inputs up front so steps never allocate.
  const int64_t widest =
      std::max({int64_t{d.n_embd}, d.q_dim(), int64_t{d.n_ff}, int64_t{g.value_dim()}});
  // Tables (8 bytes per input) only where some weight is tiled in sign
  // lines, the formats the table kernels (AVX2, AArch64) read.
  const bool tables = std::any_of(m.used.begin(), m.used.end(), [](const Weight *w) {
    return w->tiled == TileFormat::Q1SignLines || w->tiled == TileFormat::Q1RowLines;
  });
  for (int i = 0; i < kQuantLayouts; ++i) {
    const auto layout = static_cast<QuantLayout>(i);
    if (layout_has_tables(layout) && !tables)
      continue;
    b.acts.buffers[i].reserve(padded_token_stride(limits.max_batch), widest, q_block_bytes(layout),
                              meta_per_block(layout));
  }

  b.k_new = uninitialized<float>(batch * d.kv_dim());
  b.v_new = uninitialized<float>(batch * d.kv_dim());
  m.max_context = limits.max_context;
  m.slots.set_own(make_kv_cache(d, limits.max_context, limits.kv_type));
}

void RecurrentState::zero() {
  std::fill_n(data(), floats(), 0.0f);
  position = 0;
}

void KvCache::cut_back(int32_t n_keep) {
  length = n_keep;
  if (!recurrent.empty() && n_keep == 0)
    recurrent.zero();
}

std::unique_ptr<KvCache> make_kv_cache(const ModelDims &dims, int max_context, KvType type) {
  auto kv = std::make_unique<KvCache>();
  kv->type = type;
  kv->n_head_kv = dims.n_head_kv;
  kv->head_dim = dims.head_dim;
  kv->max_context = max_context;
  // Dimensions were checked against the weights (each below 2^31), but the
  // cache size multiplies three of them: check that product explicitly.
  int64_t kv_bytes = 0;
  if (__builtin_mul_overflow(int64_t{dims.n_kv_layers} * max_context,
                             dims.kv_dim() * static_cast<int64_t>(kv_type_bytes(type)), &kv_bytes))
    fail(BONSAI_ERR_OUT_OF_MEMORY, "the KV cache size overflows");
  kv->k = uninitialized<uint8_t>(kv_bytes);
  kv->v = uninitialized<uint8_t>(kv_bytes);
  kv->length = 0;
  RecurrentState &state = kv->recurrent;
  state.n_layers = dims.n_state_layers;
  state.layer_floats = dims.state_layer_floats();
  if (!state.empty()) {
    for (auto &copy : state.copies)
      copy = uninitialized<float>(state.floats());
    state.zero();
  }
  return kv;
}

std::unique_ptr<BoundModel> bind_model(const bonsai_model_desc &desc, const WeightLookup &lookup,
                                       const BindLimits &limits) {
  auto model = std::make_unique<BoundModel>();
  model->dims = check_dims(desc);
  const ModelDims &d = model->dims;
  Binder binder(lookup, *model);
  model->token_embd = &binder.matrix(desc.token_embd, "token_embd", d.n_vocab, d.n_embd);
  model->lm_head = &binder.matrix(desc.lm_head, "lm_head", d.n_vocab, d.n_embd);
  model->output_norm = binder.vector(desc.output_norm, "output_norm", d.n_embd);
  model->layers.reserve(static_cast<size_t>(d.n_layer));
  for (int i = 0; i < d.n_layer; ++i)
    model->layers.push_back(bind_layer(read_layer(desc, i), i, d, binder));
  allocate_model(*model, limits);
  return model;
}

} // namespace bonsai::cpu
