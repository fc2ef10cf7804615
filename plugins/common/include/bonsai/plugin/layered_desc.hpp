#pragma once
// Reading a bonsai_layered_model_desc (ABI 1.2, layer kinds) as every plugin
// must: entries stepped by the host's struct size, each mixer read by its own
// size, every shape checked, and one shape per mixer kind (what the CPU and
// CUDA plugins run). Throws PluginError: INVALID_ARGUMENT for a bad
// description, UNSUPPORTED for a kind or a mix of shapes the plugin does not
// run; every message names the field.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "bonsai/bonsai_backend.h"
#include "bonsai/plugin/plugin_error.hpp"
#include "bonsai/plugin/rope_rates.hpp"

namespace bonsai::plugin {

inline constexpr const char *kBindLayeredCall = "bind_layered_model";

inline std::string layer_field(int layer, const char *name) {
  return strformat("layers[%d].%s", layer, name);
}

// The shape every gated attention layer of a model shares.
struct GatedAttentionShape {
  int n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
  RopeRates rope; // n_rot / 2 rates

  bool operator==(const GatedAttentionShape &o) const {
    return n_head == o.n_head && n_head_kv == o.n_head_kv && head_dim == o.head_dim &&
           n_rot == o.n_rot && rope.inv_freq == o.rope.inv_freq &&
           rope.magnitude == o.rope.magnitude;
  }
};

// The shape every gated DeltaNet layer of a model shares.
struct DeltaNetDims {
  int conv_kernel = 0, n_k_heads = 0, n_v_heads = 0, head_dim = 0;

  int64_t key_dim() const { return int64_t{n_k_heads} * head_dim; }
  int64_t value_dim() const { return int64_t{n_v_heads} * head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); } // q | k | v channels
  bool operator==(const DeltaNetDims &o) const {
    return conv_kernel == o.conv_kernel && n_k_heads == o.n_k_heads && n_v_heads == o.n_v_heads &&
           head_dim == o.head_dim;
  }
};

// Entry i of the layer array, whose stride is the host's struct_size of entry
// 0 (a later minor version's entries are longer: what this header knows is
// copied, later fields stay zero).
inline bonsai_layer_desc read_layer(const bonsai_layered_model_desc &desc, int i) {
  const uint32_t stride = desc.layers[0].struct_size;
  if (stride < kLayerDescV12Size)
    fail_invalid(strformat("%s: layers[0].struct_size is %u, smaller than the %zu bytes of ABI "
                           "1.2",
                           kBindLayeredCall, stride, kLayerDescV12Size));
  bonsai_layer_desc layer{};
  std::memcpy(&layer,
              reinterpret_cast<const unsigned char *>(desc.layers) +
                  static_cast<size_t>(i) * stride,
              std::min<size_t>(stride, sizeof layer));
  if (layer.struct_size != stride)
    fail_invalid(strformat("%s: layers[%d].struct_size is %u but layers[0] has %u",
                           kBindLayeredCall, i, layer.struct_size, stride));
  if (layer.mixer == nullptr)
    fail_invalid(strformat("%s: layers[%d].mixer is NULL", kBindLayeredCall, i));
  return layer;
}

inline bonsai_gated_attention_mixer read_attention_mixer(const bonsai_layer_desc &layer, int i) {
  return read_abi_struct(static_cast<const bonsai_gated_attention_mixer *>(layer.mixer),
                         layer_field(i, "mixer").c_str(), kGatedAttentionMixerV12Size);
}

inline bonsai_gated_delta_net_mixer read_delta_net_mixer(const bonsai_layer_desc &layer, int i) {
  return read_abi_struct(static_cast<const bonsai_gated_delta_net_mixer *>(layer.mixer),
                         layer_field(i, "mixer").c_str(), kGatedDeltaNetMixerV12Size);
}

inline GatedAttentionShape attention_shape(const bonsai_gated_attention_mixer &a, int i) {
  if (a.n_head < 1 || a.n_head_kv < 1 || a.head_dim < 2 || a.n_head % a.n_head_kv != 0)
    fail_invalid(strformat("%s: layers[%d]: n_head %d, n_head_kv %d and head_dim %d must be "
                           "positive, n_head a multiple of n_head_kv",
                           kBindLayeredCall, i, a.n_head, a.n_head_kv, a.head_dim));
  if (a.n_rot < 2 || a.n_rot % 2 != 0 || a.n_rot > a.head_dim)
    fail_invalid(strformat("%s: layers[%d]: n_rot %d must be even and in [2, head_dim %d]",
                           kBindLayeredCall, i, a.n_rot, a.head_dim));
  if (a.rope_inv_freq == nullptr)
    fail_invalid(strformat("%s: layers[%d]: rope_inv_freq is NULL", kBindLayeredCall, i));
  GatedAttentionShape s;
  s.n_head = a.n_head, s.n_head_kv = a.n_head_kv, s.head_dim = a.head_dim, s.n_rot = a.n_rot;
  s.rope.inv_freq.assign(a.rope_inv_freq, a.rope_inv_freq + a.n_rot / 2);
  for (size_t r = 0; r < s.rope.inv_freq.size(); ++r)
    if (!(s.rope.inv_freq[r] >= 0.0) || !std::isfinite(s.rope.inv_freq[r]))
      fail_invalid(strformat("%s: layers[%d]: RoPE rate %zu is %g, not a finite rate >= 0",
                             kBindLayeredCall, i, r, s.rope.inv_freq[r]));
  s.rope.magnitude = a.rope_magnitude == 0.0f ? 1.0 : a.rope_magnitude;
  if (!(s.rope.magnitude > 0.0) || !std::isfinite(s.rope.magnitude))
    fail_invalid(strformat("%s: layers[%d]: rope_magnitude %g must be positive and finite",
                           kBindLayeredCall, i, s.rope.magnitude));
  return s;
}

inline DeltaNetDims delta_net_dims(const bonsai_gated_delta_net_mixer &g, int i) {
  if (g.conv_kernel < 1 || g.n_k_heads < 1 || g.n_v_heads < 1 || g.head_dim < 1 ||
      g.n_v_heads % g.n_k_heads != 0)
    fail_invalid(strformat("%s: layers[%d]: conv_kernel %d, n_k_heads %d, n_v_heads %d and "
                           "head_dim %d must be positive, n_v_heads a multiple of n_k_heads",
                           kBindLayeredCall, i, g.conv_kernel, g.n_k_heads, g.n_v_heads,
                           g.head_dim));
  // Every size the layer derives (channels, state floats) must fit an int32
  // channel count and the window and states their int64 products.
  const int64_t channels = (2 * int64_t{g.n_k_heads} + g.n_v_heads) * g.head_dim;
  if (channels > INT32_MAX || int64_t{g.conv_kernel} > INT32_MAX / channels ||
      int64_t{g.head_dim} * g.head_dim > INT32_MAX / g.n_v_heads)
    fail_invalid(strformat("%s: layers[%d]: %d q/k and %d value heads of %d with conv_kernel %d "
                           "are too large",
                           kBindLayeredCall, i, g.n_k_heads, g.n_v_heads, g.head_dim,
                           g.conv_kernel));
  if (g.reserved != 0)
    fail_invalid(
        strformat("%s: layers[%d]: reserved is %d; it must be 0", kBindLayeredCall, i, g.reserved));
  return {g.conv_kernel, g.n_k_heads, g.n_v_heads, g.head_dim};
}

// The model's sizes and rms_eps, and that it has layers.
inline void check_layered_dims(const bonsai_layered_model_desc &desc) {
  if (desc.n_embd < 1 || desc.n_layer < 1 || desc.n_ff < 1 || desc.n_vocab < 1)
    fail_invalid(strformat("%s: dimensions must be positive (n_embd %d, n_layer %d, n_ff %d, "
                           "n_vocab %d)",
                           kBindLayeredCall, desc.n_embd, desc.n_layer, desc.n_ff, desc.n_vocab));
  if (!(desc.rms_eps > 0.0f) || !std::isfinite(desc.rms_eps))
    fail_invalid(strformat("%s: rms_eps %g must be a positive finite number", kBindLayeredCall,
                           static_cast<double>(desc.rms_eps)));
  if (desc.layers == nullptr)
    fail_invalid(strformat("%s: layers is NULL", kBindLayeredCall));
}

// What a layered model's layers are: each kind's one shape and count.
struct LayeredShapes {
  std::optional<GatedAttentionShape> attention;
  std::optional<DeltaNetDims> delta_net;
  int n_attention = 0, n_delta_net = 0;
};

// First pass over a checked description (check_layered_dims): every kind
// one that `plugin` (its name in messages) runs, and each kind's shape the
// same in every layer.
inline LayeredShapes read_layered_shapes(const bonsai_layered_model_desc &desc,
                                         const char *plugin) {
  LayeredShapes shapes;
  for (int i = 0; i < desc.n_layer; ++i) {
    const bonsai_layer_desc layer = read_layer(desc, i);
    if (layer.mixer_kind == BONSAI_MIXER_GATED_ATTENTION) {
      const GatedAttentionShape s = attention_shape(read_attention_mixer(layer, i), i);
      if (shapes.attention && !(*shapes.attention == s))
        fail(BONSAI_ERR_UNSUPPORTED,
             strformat("%s: layers[%d]: attention layers of different shapes are not supported",
                       kBindLayeredCall, i));
      shapes.attention = s;
      ++shapes.n_attention;
    } else if (layer.mixer_kind == BONSAI_MIXER_GATED_DELTA_NET) {
      const DeltaNetDims s = delta_net_dims(read_delta_net_mixer(layer, i), i);
      if (shapes.delta_net && !(*shapes.delta_net == s))
        fail(BONSAI_ERR_UNSUPPORTED,
             strformat("%s: layers[%d]: DeltaNet layers of different shapes are not supported",
                       kBindLayeredCall, i));
      shapes.delta_net = s;
      ++shapes.n_delta_net;
    } else {
      fail(BONSAI_ERR_UNSUPPORTED,
           strformat("%s: layers[%d]: mixer kind %u is not one the %s plugin runs",
                     kBindLayeredCall, i, layer.mixer_kind, plugin));
    }
  }
  return shapes;
}

} // namespace bonsai::plugin
