#include "layered_model.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>

#include "bonsai/plugin/abi_checks.hpp"
#include "plugin_error.hpp"
#include "weight_binder.hpp"

namespace bonsai::cpu {
namespace {

constexpr const char *kCall = "bind_layered_model";

std::string field(int layer, const char *name) {
  return strformat("layers[%d].%s", layer, name);
}

// Entry i of an array of ABI structs whose stride is the host's struct_size
// of entry 0 (a later minor version's entries are longer).
bonsai_layer_desc read_layer(const bonsai_layered_model_desc &desc, int i) {
  const uint32_t stride = desc.layers[0].struct_size;
  if (stride < kLayerDescV12Size)
    fail_invalid(strformat("%s: layers[0].struct_size is %u, smaller than the %zu bytes of ABI "
                           "1.2",
                           kCall, stride, kLayerDescV12Size));
  // A later minor version's entry is longer: copy what this header knows;
  // fields past it stay zero.
  bonsai_layer_desc layer{};
  std::memcpy(&layer,
              reinterpret_cast<const unsigned char *>(desc.layers) +
                  static_cast<size_t>(i) * stride,
              std::min<size_t>(stride, sizeof layer));
  if (layer.struct_size != stride)
    fail_invalid(strformat("%s: layers[%d].struct_size is %u but layers[0] has %u", kCall, i,
                           layer.struct_size, stride));
  if (layer.mixer == nullptr)
    fail_invalid(strformat("%s: layers[%d].mixer is NULL", kCall, i));
  return layer;
}

// A layer's mixer struct, at least as large as this header's.
template <class Mixer> Mixer read_mixer(const bonsai_layer_desc &layer, int i, size_t v12_size) {
  const auto *mixer = static_cast<const Mixer *>(layer.mixer);
  return read_abi_struct(mixer, field(i, "mixer").c_str(), v12_size);
}
bonsai_gated_attention_mixer attention_mixer(const bonsai_layer_desc &layer, int i) {
  return read_mixer<bonsai_gated_attention_mixer>(layer, i, kGatedAttentionMixerV12Size);
}
bonsai_gated_delta_net_mixer delta_net_mixer(const bonsai_layer_desc &layer, int i) {
  return read_mixer<bonsai_gated_delta_net_mixer>(layer, i, kGatedDeltaNetMixerV12Size);
}

// The shape every attention layer shares, from the first one.
struct AttentionShape {
  int n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
  plugin::RopeRates rope;

  bool operator==(const AttentionShape &o) const {
    return n_head == o.n_head && n_head_kv == o.n_head_kv && head_dim == o.head_dim &&
           n_rot == o.n_rot && rope.inv_freq == o.rope.inv_freq &&
           rope.magnitude == o.rope.magnitude;
  }
};

AttentionShape attention_shape(const bonsai_gated_attention_mixer &a, int i) {
  if (a.n_head < 1 || a.n_head_kv < 1 || a.head_dim < 2 || a.n_head % a.n_head_kv != 0)
    fail_invalid(strformat("%s: layers[%d]: n_head %d, n_head_kv %d and head_dim %d must be "
                           "positive, n_head a multiple of n_head_kv",
                           kCall, i, a.n_head, a.n_head_kv, a.head_dim));
  if (a.n_rot < 2 || a.n_rot % 2 != 0 || a.n_rot > a.head_dim)
    fail_invalid(strformat("%s: layers[%d]: n_rot %d must be even and in [2, head_dim %d]", kCall,
                           i, a.n_rot, a.head_dim));
  if (a.rope_inv_freq == nullptr)
    fail_invalid(strformat("%s: layers[%d]: rope_inv_freq is NULL", kCall, i));
  AttentionShape s{a.n_head, a.n_head_kv, a.head_dim, a.n_rot, {}};
  s.rope.inv_freq.assign(a.rope_inv_freq, a.rope_inv_freq + a.n_rot / 2);
  for (size_t r = 0; r < s.rope.inv_freq.size(); ++r)
    if (!(s.rope.inv_freq[r] >= 0.0) || !std::isfinite(s.rope.inv_freq[r]))
      fail_invalid(strformat("%s: layers[%d]: RoPE rate %zu is %g, not a finite rate >= 0", kCall,
                             i, r, s.rope.inv_freq[r]));
  s.rope.magnitude = a.rope_magnitude == 0.0f ? 1.0 : a.rope_magnitude;
  if (!(s.rope.magnitude > 0.0) || !std::isfinite(s.rope.magnitude))
    fail_invalid(strformat("%s: layers[%d]: rope_magnitude %g must be positive and finite", kCall,
                           i, s.rope.magnitude));
  return s;
}

DeltaNetShape delta_net_shape(const bonsai_gated_delta_net_mixer &g, int i, float eps) {
  if (g.conv_kernel < 1 || g.n_k_heads < 1 || g.n_v_heads < 1 || g.head_dim < 1 ||
      g.n_v_heads % g.n_k_heads != 0)
    fail_invalid(strformat("%s: layers[%d]: conv_kernel %d, n_k_heads %d, n_v_heads %d and "
                           "head_dim %d must be positive, n_v_heads a multiple of n_k_heads",
                           kCall, i, g.conv_kernel, g.n_k_heads, g.n_v_heads, g.head_dim));
  // Every size the layer derives (channels, state floats) must fit an int32
  // channel count and the window and states their int64 products.
  const int64_t channels = (2 * int64_t{g.n_k_heads} + g.n_v_heads) * g.head_dim;
  if (channels > INT32_MAX || int64_t{g.conv_kernel} > INT32_MAX / channels ||
      int64_t{g.head_dim} * g.head_dim > INT32_MAX / g.n_v_heads)
    fail_invalid(strformat("%s: layers[%d]: %d q/k and %d value heads of %d with conv_kernel %d "
                           "are too large",
                           kCall, i, g.n_k_heads, g.n_v_heads, g.head_dim, g.conv_kernel));
  if (g.reserved != 0)
    fail_invalid(strformat("%s: layers[%d]: reserved is %d; it must be 0", kCall, i, g.reserved));
  return {g.conv_kernel, g.n_k_heads, g.n_v_heads, g.head_dim, eps};
}

bool same_shape(const DeltaNetShape &a, const DeltaNetShape &b) {
  return a.conv_kernel == b.conv_kernel && a.n_k_heads == b.n_k_heads &&
         a.n_v_heads == b.n_v_heads && a.head_dim == b.head_dim;
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

// First pass over the layers: every kind supported and each kind's shape
// the same in every layer; fills the dims.
void read_shapes(const bonsai_layered_model_desc &desc, ModelDims &d) {
  std::optional<AttentionShape> attention;
  std::optional<DeltaNetShape> delta_net;
  for (int i = 0; i < desc.n_layer; ++i) {
    const bonsai_layer_desc layer = read_layer(desc, i);
    if (layer.mixer_kind == BONSAI_MIXER_GATED_ATTENTION) {
      const AttentionShape s = attention_shape(attention_mixer(layer, i), i);
      if (attention && !(*attention == s))
        fail(BONSAI_ERR_UNSUPPORTED,
             strformat("%s: layers[%d]: attention layers of different shapes are not supported",
                       kCall, i));
      attention = s;
      ++d.n_kv_layers;
    } else if (layer.mixer_kind == BONSAI_MIXER_GATED_DELTA_NET) {
      const DeltaNetShape s = delta_net_shape(delta_net_mixer(layer, i), i, d.rms_eps);
      if (delta_net && !same_shape(*delta_net, s))
        fail(BONSAI_ERR_UNSUPPORTED,
             strformat("%s: layers[%d]: DeltaNet layers of different shapes are not supported",
                       kCall, i));
      delta_net = s;
      ++d.n_state_layers;
    } else {
      fail(BONSAI_ERR_UNSUPPORTED,
           strformat("%s: layers[%d]: mixer kind %u is not one the CPU plugin runs", kCall, i,
                     layer.mixer_kind));
    }
  }
  if (attention) {
    d.n_head = attention->n_head;
    d.n_head_kv = attention->n_head_kv;
    d.head_dim = attention->head_dim;
    d.n_rot = attention->n_rot;
    d.rope = attention->rope;
  }
  if (delta_net)
    d.delta_net = *delta_net;
}

} // namespace

bool supports_mixer_kind(uint32_t kind) {
  return kind == BONSAI_MIXER_GATED_ATTENTION || kind == BONSAI_MIXER_GATED_DELTA_NET;
}

std::unique_ptr<BoundModel> bind_layered_model(const bonsai_layered_model_desc &desc,
                                               const WeightLookup &lookup,
                                               const BindLimits &limits) {
  if (desc.n_embd < 1 || desc.n_layer < 1 || desc.n_ff < 1 || desc.n_vocab < 1)
    fail_invalid(strformat("%s: dimensions must be positive (n_embd %d, n_layer %d, n_ff %d, "
                           "n_vocab %d)",
                           kCall, desc.n_embd, desc.n_layer, desc.n_ff, desc.n_vocab));
  if (!(desc.rms_eps > 0.0f) || !std::isfinite(desc.rms_eps))
    fail_invalid(strformat("%s: rms_eps %g must be a positive finite number", kCall,
                           static_cast<double>(desc.rms_eps)));
  if (desc.layers == nullptr)
    fail_invalid(strformat("%s: layers is NULL", kCall));
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
    const bonsai_layer_desc layer = read_layer(desc, i);
    LayerBinding l;
    l.attn_norm = binder.vector(layer.attn_norm, field(i, "attn_norm"), d.n_embd);
    if (layer.mixer_kind == BONSAI_MIXER_GATED_ATTENTION) {
      l.kind = MixerKind::GatedAttention;
      l.cache_index = n_attention++;
      bind_attention(attention_mixer(layer, i), i, d, binder, l);
    } else {
      l.kind = MixerKind::GatedDeltaNet;
      l.cache_index = n_delta_net++;
      bind_delta_net(delta_net_mixer(layer, i), i, d, binder, l.delta_net);
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
