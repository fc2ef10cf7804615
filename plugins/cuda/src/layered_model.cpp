// bind_layered_model (ABI 1.2 layer kinds) on the GPU: qwen35's gated
// attention and gated DeltaNet layers, read with the plugins' shared
// description checks (plugins/common, layered_desc.hpp).
#include <algorithm>

#include "bonsai/plugin/layered_desc.hpp"
#include "bonsai/plugin/rope_rates.hpp"
#include "model.hpp"
#include "model_binder.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

using plugin::kBindLayeredCall;
using plugin::layer_field;

// The kernels' limits: the conv window in registers (DN_MAX_CONV) and the
// delta rule's rows per lane (DR_MAX_ROWS x 32) in kernels/delta_net.cuh;
// the attention kernels' per-head arrays (bind_model's head limit).
constexpr int kMaxConvKernel = 8;
constexpr int kMaxDeltaNetHeadDim = 256;
constexpr int kMaxAttentionHeadDim = 1024;

void check_kernel_limits(const plugin::LayeredShapes &shapes) {
  if (const auto &g = shapes.delta_net) {
    if (g->conv_kernel > kMaxConvKernel)
      fail(BONSAI_ERR_UNSUPPORTED,
           strformat("%s: a DeltaNet conv of width %d; the CUDA plugin runs up to %d",
                     kBindLayeredCall, g->conv_kernel, kMaxConvKernel));
    if (g->head_dim > kMaxDeltaNetHeadDim)
      fail(BONSAI_ERR_UNSUPPORTED,
           strformat("%s: DeltaNet heads of %d; the CUDA plugin runs up to %d", kBindLayeredCall,
                     g->head_dim, kMaxDeltaNetHeadDim));
  }
  if (const auto &a = shapes.attention; a && a->head_dim > kMaxAttentionHeadDim)
    fail(BONSAI_ERR_UNSUPPORTED,
         strformat("%s: attention heads of %d; the CUDA plugin runs up to %d", kBindLayeredCall,
                   a->head_dim, kMaxAttentionHeadDim));
}

void bind_attention(const bonsai_gated_attention_mixer &a, int i, const ModelDims &d,
                    ModelBinder &bind, LayerBinding &l) {
  const int64_t q_width = int64_t{d.n_head} * d.head_dim;
  const int64_t kv_width = int64_t{d.n_head_kv} * d.head_dim;
  l.wq = &bind.matrix(a.wq, layer_field(i, "mixer.wq"), 2 * q_width, d.n_embd);
  l.wk = &bind.matrix(a.wk, layer_field(i, "mixer.wk"), kv_width, d.n_embd);
  l.wv = &bind.matrix(a.wv, layer_field(i, "mixer.wv"), kv_width, d.n_embd);
  l.q_norm = bind.vector(a.q_norm, layer_field(i, "mixer.q_norm"), d.head_dim);
  l.k_norm = bind.vector(a.k_norm, layer_field(i, "mixer.k_norm"), d.head_dim);
  l.wo = &bind.matrix(a.wo, layer_field(i, "mixer.wo"), d.n_embd, q_width);
}

void bind_delta_net(const bonsai_gated_delta_net_mixer &g, int i, const ModelDims &d,
                    ModelBinder &bind, DeltaNetBinding &l) {
  const plugin::DeltaNetDims &s = d.delta_net;
  l.qkv = &bind.matrix(g.qkv, layer_field(i, "mixer.qkv"), s.conv_dim(), d.n_embd);
  l.gate = &bind.matrix(g.gate, layer_field(i, "mixer.gate"), s.value_dim(), d.n_embd);
  l.beta = &bind.matrix(g.beta, layer_field(i, "mixer.beta"), s.n_v_heads, d.n_embd);
  l.alpha = &bind.matrix(g.alpha, layer_field(i, "mixer.alpha"), s.n_v_heads, d.n_embd);
  l.taps = bind.floats(g.conv, layer_field(i, "mixer.conv"), s.conv_dim(), s.conv_kernel);
  l.dt_bias = bind.vector(g.dt_bias, layer_field(i, "mixer.dt_bias"), s.n_v_heads);
  l.a = bind.vector(g.a, layer_field(i, "mixer.a"), s.n_v_heads);
  l.norm = bind.vector(g.norm, layer_field(i, "mixer.norm"), s.head_dim);
  l.out = &bind.matrix(g.out, layer_field(i, "mixer.out"), d.n_embd, s.value_dim());
}

std::unique_ptr<BoundModel> resolve_layered(const Device &device, const Kernels &kernels,
                                            const bonsai_layered_model_desc &desc,
                                            const WeightLookup &find, const BindLimits &limits,
                                            bool dry_run) {
  plugin::check_layered_dims(desc);
  const plugin::LayeredShapes shapes = plugin::read_layered_shapes(desc, "CUDA");
  check_kernel_limits(shapes);
  auto model = std::make_unique<BoundModel>(device.api());
  model->layered = true;
  ModelDims &d = model->dims;
  d.n_embd = desc.n_embd;
  d.n_layer = desc.n_layer;
  d.n_ff = desc.n_ff;
  d.n_vocab = desc.n_vocab;
  d.rms_eps = desc.rms_eps;
  d.n_kv_layers = shapes.n_attention;
  d.n_state_layers = shapes.n_delta_net;
  if (const auto &a = shapes.attention) {
    d.n_head = a->n_head;
    d.n_head_kv = a->n_head_kv;
    d.head_dim = a->head_dim;
    d.n_rot = a->n_rot;
    d.rope_magnitude = static_cast<float>(a->rope.magnitude);
    if (!dry_run) {
      const size_t bytes = a->rope.inv_freq.size() * sizeof(double);
      model->rope_rates = DeviceBuffer(device, bytes, "RoPE rates");
      device.upload(model->rope_rates.get(), a->rope.inv_freq.data(), bytes);
    }
  }
  if (const auto &g = shapes.delta_net)
    d.delta_net = *g;
  model->max_context = limits.max_context;
  model->max_batch = limits.max_batch;
  model->kv_bytes = limits.kv_f16 ? 2 : 4;
  set_attention_splits(*model);

  ModelBinder bind{device, kernels, find, *model, dry_run, kBindLayeredCall};
  model->token_embd = &bind.matrix(desc.token_embd, "token_embd", d.n_vocab, d.n_embd);
  model->lm_head = &bind.matrix(desc.lm_head, "lm_head", d.n_vocab, d.n_embd);
  model->output_norm = bind.vector(desc.output_norm, "output_norm", d.n_embd);
  int n_attention = 0, n_delta_net = 0;
  for (int i = 0; i < d.n_layer; ++i) {
    const bonsai_layer_desc layer = plugin::read_layer(desc, i);
    LayerBinding l;
    l.attn_norm = bind.vector(layer.attn_norm, layer_field(i, "attn_norm"), d.n_embd);
    if (layer.mixer_kind == BONSAI_MIXER_GATED_ATTENTION) {
      l.kind = MixerKind::GatedAttention;
      l.cache_index = n_attention++;
      bind_attention(plugin::read_attention_mixer(layer, i), i, d, bind, l);
    } else {
      l.kind = MixerKind::GatedDeltaNet;
      l.cache_index = n_delta_net++;
      bind_delta_net(plugin::read_delta_net_mixer(layer, i), i, d, bind, l.delta_net);
    }
    l.ffn_norm = bind.vector(layer.ffn_norm, layer_field(i, "ffn_norm"), d.n_embd);
    l.w_gate = &bind.matrix(layer.w_gate, layer_field(i, "w_gate"), d.n_ff, d.n_embd);
    l.w_up = &bind.matrix(layer.w_up, layer_field(i, "w_up"), d.n_ff, d.n_embd);
    l.w_down = &bind.matrix(layer.w_down, layer_field(i, "w_down"), d.n_embd, d.n_ff);
    if (l.w_gate->layout.type != l.w_up->layout.type)
      fail(BONSAI_ERR_UNSUPPORTED,
           strformat("%s: layers[%d] gate and up projections have different types (%u, %u); the "
                     "fused SwiGLU kernel needs one type",
                     kBindLayeredCall, i, l.w_gate->layout.type, l.w_up->layout.type));
    model->layers.push_back(l);
  }
  if (!dry_run)
    allocate_activations(device, *model);
  return model;
}

} // namespace

void validate_layered_model(const Device &device, const Kernels &kernels,
                            const bonsai_layered_model_desc &desc, const WeightLookup &find,
                            const BindLimits &limits) {
  resolve_layered(device, kernels, desc, find, limits, true);
}

std::unique_ptr<BoundModel> bind_layered_model(const Device &device, const Kernels &kernels,
                                               const bonsai_layered_model_desc &desc,
                                               const WeightLookup &find, const BindLimits &limits) {
  return resolve_layered(device, kernels, desc, find, limits, false);
}

} // namespace bonsai::cuda
