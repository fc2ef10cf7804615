#pragma once
// The layers of a layered model (ABI 1.2) bound with a plugin's own binder:
// every weight a layer names resolved with its shape checked, into the
// plugin's layer type. Both plugins walk the layers this way; what differs
// (host or device memory, the f32 form of small vectors) is the binder's.
//
// Binder: matrix(handle, field, rows, cols) -> a weight reference;
// vector(handle, field, n) and floats(handle, field, rows, cols) -> the
// plugin's f32 form. Layer: `kind` (an enum with GatedAttention and
// GatedDeltaNet), `cache_index`, attn_norm, ffn_norm, w_gate, w_up, w_down,
// the attention fields wq, wk, wv, wo, q_norm, k_norm, and `delta_net` with
// qkv, gate, beta, alpha, taps, dt_bias, a, norm, out.
#include <cstdint>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/layered_desc.hpp"

namespace bonsai::plugin {

template <class Layer, class Binder>
void bind_attention_mixer(const bonsai_gated_attention_mixer &m, int i, int64_t n_embd,
                          const GatedAttentionShape &s, Binder &bind, Layer &l) {
  const int64_t q_width = int64_t{s.n_head} * s.head_dim;
  const int64_t kv_width = int64_t{s.n_head_kv} * s.head_dim;
  l.wq = &bind.matrix(m.wq, layer_field(i, "mixer.wq"), 2 * q_width, n_embd);
  l.wk = &bind.matrix(m.wk, layer_field(i, "mixer.wk"), kv_width, n_embd);
  l.wv = &bind.matrix(m.wv, layer_field(i, "mixer.wv"), kv_width, n_embd);
  l.q_norm = bind.vector(m.q_norm, layer_field(i, "mixer.q_norm"), s.head_dim);
  l.k_norm = bind.vector(m.k_norm, layer_field(i, "mixer.k_norm"), s.head_dim);
  l.wo = &bind.matrix(m.wo, layer_field(i, "mixer.wo"), n_embd, q_width);
}

template <class DeltaNet, class Binder>
void bind_delta_net_mixer(const bonsai_gated_delta_net_mixer &m, int i, int64_t n_embd,
                          const DeltaNetDims &s, Binder &bind, DeltaNet &l) {
  l.qkv = &bind.matrix(m.qkv, layer_field(i, "mixer.qkv"), s.conv_dim(), n_embd);
  l.gate = &bind.matrix(m.gate, layer_field(i, "mixer.gate"), s.value_dim(), n_embd);
  l.beta = &bind.matrix(m.beta, layer_field(i, "mixer.beta"), s.n_v_heads, n_embd);
  l.alpha = &bind.matrix(m.alpha, layer_field(i, "mixer.alpha"), s.n_v_heads, n_embd);
  l.taps = bind.floats(m.conv, layer_field(i, "mixer.conv"), s.conv_dim(), s.conv_kernel);
  l.dt_bias = bind.vector(m.dt_bias, layer_field(i, "mixer.dt_bias"), s.n_v_heads);
  l.a = bind.vector(m.a, layer_field(i, "mixer.a"), s.n_v_heads);
  l.norm = bind.vector(m.norm, layer_field(i, "mixer.norm"), s.head_dim);
  l.out = &bind.matrix(m.out, layer_field(i, "mixer.out"), n_embd, s.value_dim());
}

// Every layer of a checked description (read_layered_shapes gave `shapes`),
// in order; each layer's cache_index counts the layers of its kind before
// it. `check(layer, i)` runs on each layer once it is bound (the plugin's
// own rules, e.g. on the MLP's types).
template <class Layer, class Binder, class Check>
std::vector<Layer> bind_layered_layers(const bonsai_layered_model_desc &desc,
                                       const LayeredShapes &shapes, Binder &bind, Check check) {
  using Kind = decltype(Layer::kind);
  const int64_t n_embd = desc.n_embd, n_ff = desc.n_ff;
  std::vector<Layer> layers;
  int n_attention = 0, n_delta_net = 0;
  for (int i = 0; i < desc.n_layer; ++i) {
    const bonsai_layer_desc layer = read_layer(desc, i);
    Layer l;
    l.attn_norm = bind.vector(layer.attn_norm, layer_field(i, "attn_norm"), n_embd);
    if (layer.mixer_kind == BONSAI_MIXER_GATED_ATTENTION) {
      l.kind = Kind::GatedAttention;
      l.cache_index = n_attention++;
      bind_attention_mixer(read_attention_mixer(layer, i), i, n_embd, *shapes.attention, bind, l);
    } else {
      l.kind = Kind::GatedDeltaNet;
      l.cache_index = n_delta_net++;
      bind_delta_net_mixer(read_delta_net_mixer(layer, i), i, n_embd, *shapes.delta_net, bind,
                           l.delta_net);
    }
    l.ffn_norm = bind.vector(layer.ffn_norm, layer_field(i, "ffn_norm"), n_embd);
    l.w_gate = &bind.matrix(layer.w_gate, layer_field(i, "w_gate"), n_ff, n_embd);
    l.w_up = &bind.matrix(layer.w_up, layer_field(i, "w_up"), n_ff, n_embd);
    l.w_down = &bind.matrix(layer.w_down, layer_field(i, "w_down"), n_embd, n_ff);
    check(l, i);
    layers.push_back(std::move(l));
  }
  return layers;
}

} // namespace bonsai::plugin
