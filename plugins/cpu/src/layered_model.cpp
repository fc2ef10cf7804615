#include "layered_model.hpp"

#include "bonsai/plugin/abi_checks.hpp"
#include "bonsai/plugin/layered_desc.hpp"
#include "plugin_error.hpp"
#include "weight_binder.hpp"

namespace bonsai::cpu {
namespace {

constexpr const char *kCall = plugin::kBindLayeredCall;

std::string field(int layer, const char *name) {
  return plugin::layer_field(layer, name);
}

void bind_attention(const bonsai_gated_attention_mixer &a, int i, const ModelDims &d,
                    Binder &binder, LayerBinding &l) {
  const int64_t q_dim = d.q_dim(), kv_dim = d.kv_dim();
  l.wq = &binder.matrix(a.wq, field(i, "mixer.wq"), 2 * q_dim, d.n_embd);
  l.wk = &binder.matrix(a.wk, field(i, "mixer.wk"), kv_dim, d.n_embd);
  l.wv = &binder.matrix(a.wv, field(i, "mixer.wv"), kv_dim, d.n_embd);
  l.q_norm = binder.vector(a.q_norm, field(i, "mixer.q_norm"), d.head_dim);
  l.k_norm = binder.vector(a.k_norm, field(i, "mixer.k_norm"), d.head_dim);
  l.wo = &binder.matrix(a.wo, field(i, "mixer.wo"), d.n_embd, q_dim);
}

void bind_delta_net(const bonsai_gated_delta_net_mixer &g, int i, const ModelDims &d,
                    Binder &binder, DeltaNetBinding &l) {
  const DeltaNetShape &s = d.delta_net;
  l.qkv = &binder.matrix(g.qkv, field(i, "mixer.qkv"), s.conv_dim(), d.n_embd);
  l.gate = &binder.matrix(g.gate, field(i, "mixer.gate"), s.value_dim(), d.n_embd);
  l.beta = &binder.matrix(g.beta, field(i, "mixer.beta"), s.n_v_heads, d.n_embd);
  l.alpha = &binder.matrix(g.alpha, field(i, "mixer.alpha"), s.n_v_heads, d.n_embd);
  l.taps = binder.floats(g.conv, field(i, "mixer.conv"), s.conv_dim(), s.conv_kernel);
  l.dt_bias = binder.vector(g.dt_bias, field(i, "mixer.dt_bias"), s.n_v_heads);
  l.a = binder.vector(g.a, field(i, "mixer.a"), s.n_v_heads);
  l.norm = binder.vector(g.norm, field(i, "mixer.norm"), s.head_dim);
  l.out = &binder.matrix(g.out, field(i, "mixer.out"), d.n_embd, s.value_dim());
}

// Every kind supported and each kind's shape the same in every layer;
// fills the dims.
void read_shapes(const bonsai_layered_model_desc &desc, ModelDims &d) {
  const plugin::LayeredShapes shapes = plugin::read_layered_shapes(desc, "CPU");
  d.n_kv_layers = shapes.n_attention;
  d.n_state_layers = shapes.n_delta_net;
  if (const auto &a = shapes.attention) {
    d.n_head = a->n_head;
    d.n_head_kv = a->n_head_kv;
    d.head_dim = a->head_dim;
    d.n_rot = a->n_rot;
    d.rope = a->rope;
  }
  if (const auto &g = shapes.delta_net)
    d.delta_net = {g->conv_kernel, g->n_k_heads, g->n_v_heads, g->head_dim, d.rms_eps};
}

} // namespace

bool supports_mixer_kind(uint32_t kind) {
  return kind == BONSAI_MIXER_GATED_ATTENTION || kind == BONSAI_MIXER_GATED_DELTA_NET;
}

std::unique_ptr<BoundModel> bind_layered_model(const bonsai_layered_model_desc &desc,
                                               const WeightLookup &lookup,
                                               const BindLimits &limits) {
  plugin::check_layered_dims(desc);
  auto model = std::make_unique<BoundModel>();
  ModelDims &d = model->dims;
  d.n_embd = desc.n_embd;
  d.n_layer = desc.n_layer;
  d.n_ff = desc.n_ff;
  d.n_vocab = desc.n_vocab;
  d.rms_eps = desc.rms_eps;
  read_shapes(desc, d);

  Binder binder(lookup, *model, kCall);
  model->token_embd = &binder.matrix(desc.token_embd, "token_embd", d.n_vocab, d.n_embd);
  model->lm_head = &binder.matrix(desc.lm_head, "lm_head", d.n_vocab, d.n_embd);
  model->output_norm = binder.vector(desc.output_norm, "output_norm", d.n_embd);
  int n_attention = 0, n_delta_net = 0;
  for (int i = 0; i < d.n_layer; ++i) {
    const bonsai_layer_desc layer = plugin::read_layer(desc, i);
    LayerBinding l;
    l.attn_norm = binder.vector(layer.attn_norm, field(i, "attn_norm"), d.n_embd);
    if (layer.mixer_kind == BONSAI_MIXER_GATED_ATTENTION) {
      l.kind = MixerKind::GatedAttention;
      l.cache_index = n_attention++;
      bind_attention(plugin::read_attention_mixer(layer, i), i, d, binder, l);
    } else {
      l.kind = MixerKind::GatedDeltaNet;
      l.cache_index = n_delta_net++;
      bind_delta_net(plugin::read_delta_net_mixer(layer, i), i, d, binder, l.delta_net);
    }
    l.ffn_norm = binder.vector(layer.ffn_norm, field(i, "ffn_norm"), d.n_embd);
    l.w_gate = &binder.matrix(layer.w_gate, field(i, "w_gate"), d.n_ff, d.n_embd);
    l.w_up = &binder.matrix(layer.w_up, field(i, "w_up"), d.n_ff, d.n_embd);
    l.w_down = &binder.matrix(layer.w_down, field(i, "w_down"), d.n_embd, d.n_ff);
    if (l.w_gate->type != l.w_up->type)
      fail_invalid(strformat("%s: layers[%d] w_gate and w_up must have the same type", kCall, i));
    model->layers.push_back(std::move(l));
  }
  BindLimits chosen = limits;
  if (limits.kv_type_for_head_dim && d.n_kv_layers > 0)
    chosen.kv_type = limits.kv_type_for_head_dim(d.head_dim);
  allocate_model(*model, chosen);
  return model;
}

} // namespace bonsai::cpu
