#include "bonsai/binding/model_binding.hpp"

#include "bonsai/core/rope.hpp"

namespace bonsai::binding {

bonsai_weight_desc weight_desc(const TensorView &tensor, const PreparedWeight &prepared) {
  bonsai_weight_desc desc{};
  desc.struct_size = sizeof desc;
  desc.type = static_cast<uint32_t>(prepared.type);
  desc.cols = tensor.cols();
  desc.rows = tensor.rows();
  desc.data = prepared.data;
  desc.nbytes = prepared.nbytes;
  desc.flags = prepared.converted() ? 0u : BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT;
  desc.name = tensor.name.c_str();
  return desc;
}

namespace {

// The layered description of a qwen35 model whose weights bind_spec has
// uploaded: mixers first (the layer entries point at them), then layers.
void describe_layers(const ModelSpec &spec, ModelBinding &out) {
  const Qwen3Hparams &hp = spec.hparams;
  const DeltaNetHparams &g = hp.hybrid.value().delta_net;
  LayeredBinding &l = out.layered;
  l = LayeredBinding{};
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const bonsai_layer_weights &w = out.layers[i];
    if (spec.layers[i].recurrent()) {
      const DeltaNetHandles &h = out.delta_net[i];
      bonsai_gated_delta_net_mixer m{};
      m.struct_size = sizeof m;
      m.conv_kernel = static_cast<int32_t>(g.conv_kernel);
      m.n_k_heads = static_cast<int32_t>(g.n_k_heads);
      m.n_v_heads = static_cast<int32_t>(g.n_v_heads);
      m.head_dim = static_cast<int32_t>(g.head_dim);
      m.qkv = h.qkv;
      m.gate = h.gate;
      m.beta = h.beta;
      m.alpha = h.alpha;
      m.conv = h.conv;
      m.dt_bias = h.dt_bias;
      m.a = h.a;
      m.norm = h.norm;
      m.out = h.out;
      l.delta_net.push_back(m);
    } else {
      bonsai_gated_attention_mixer m{};
      m.struct_size = sizeof m;
      m.n_head = static_cast<int32_t>(hp.n_head);
      m.n_head_kv = static_cast<int32_t>(hp.n_head_kv);
      m.head_dim = static_cast<int32_t>(hp.head_dim);
      m.n_rot = static_cast<int32_t>(out.rope_rates.size() * 2);
      m.rope_magnitude = out.desc.rope_magnitude;
      m.rope_inv_freq = out.rope_rates.data();
      m.wq = w.wq;
      m.wk = w.wk;
      m.wv = w.wv;
      m.q_norm = w.q_norm;
      m.k_norm = w.k_norm;
      m.wo = w.wo;
      l.attention.push_back(m);
    }
  }
  size_t next_attention = 0, next_delta_net = 0;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const bonsai_layer_weights &w = out.layers[i];
    bonsai_layer_desc layer{};
    layer.struct_size = sizeof layer;
    if (spec.layers[i].recurrent()) {
      layer.mixer_kind = BONSAI_MIXER_GATED_DELTA_NET;
      layer.mixer = &l.delta_net[next_delta_net++];
    } else {
      layer.mixer_kind = BONSAI_MIXER_GATED_ATTENTION;
      layer.mixer = &l.attention[next_attention++];
    }
    layer.attn_norm = w.attn_norm;
    layer.ffn_norm = w.ffn_norm;
    layer.w_gate = w.w_gate;
    layer.w_up = w.w_up;
    layer.w_down = w.w_down;
    l.layers.push_back(layer);
  }
  bonsai_layered_model_desc &d = l.desc;
  d.struct_size = sizeof d;
  d.n_embd = out.desc.n_embd;
  d.n_layer = out.desc.n_layer;
  d.n_ff = out.desc.n_ff;
  d.n_vocab = out.desc.n_vocab;
  d.rms_eps = out.desc.rms_eps;
  d.token_embd = out.desc.token_embd;
  d.output_norm = out.desc.output_norm;
  d.lm_head = out.desc.lm_head;
  d.layers = l.layers.data();
}

} // namespace

void bind_spec(const ModelSpec &spec, const UploadTensorFn &upload, ModelBinding &out,
               bool layered) {
  bonsai_model_desc &desc = out.desc;
  desc = bonsai_model_desc{};
  desc.struct_size = sizeof desc;
  desc.token_embd = upload(spec.token_embd);
  out.layers.clear();
  out.delta_net.clear();
  out.layers.reserve(spec.layers.size());
  for (const LayerWeights &layer : spec.layers) {
    bonsai_layer_weights w{};
    w.struct_size = sizeof w;
    w.attn_norm = upload(layer.attn_norm);
    DeltaNetHandles gdn; // stays empty for an attention layer
    if (const auto &d = layer.delta_net) {
      gdn = {upload(d->qkv),  upload(d->gate),    upload(d->beta), upload(d->alpha), upload(d->out),
             upload(d->conv), upload(d->dt_bias), upload(d->a),    upload(d->norm)};
    } else {
      w.wq = upload(layer.attn_q);
      w.wk = upload(layer.attn_k);
      w.wv = upload(layer.attn_v);
      w.q_norm = upload(layer.attn_q_norm);
      w.k_norm = upload(layer.attn_k_norm);
      w.wo = upload(layer.attn_output);
    }
    w.ffn_norm = upload(layer.ffn_norm);
    w.w_gate = upload(layer.ffn_gate);
    w.w_up = upload(layer.ffn_up);
    w.w_down = upload(layer.ffn_down);
    out.layers.push_back(w);
    if (spec.arch() == Architecture::qwen35)
      out.delta_net.push_back(gdn);
  }
  desc.output_norm = upload(spec.output_norm);
  desc.lm_head = spec.output ? upload(*spec.output) : desc.token_embd;

  const Qwen3Hparams &hp = spec.hparams;
  desc.n_embd = static_cast<int32_t>(hp.n_embd);
  desc.n_layer = static_cast<int32_t>(hp.n_layer);
  desc.n_head = static_cast<int32_t>(hp.n_head);
  desc.n_head_kv = static_cast<int32_t>(hp.n_head_kv);
  desc.head_dim = static_cast<int32_t>(hp.head_dim);
  desc.n_ff = static_cast<int32_t>(hp.n_ff);
  desc.n_vocab = static_cast<int32_t>(hp.n_vocab);
  desc.rms_eps = hp.rms_eps;
  desc.rope_freq_base = hp.rope.freq_base;
  desc.layers = out.layers.data();
  out.rope_rates = attention_rope_rates(hp);
  desc.rope_inv_freq = out.rope_rates.data();
  desc.rope_magnitude = static_cast<float>(rope_magnitude(hp.rope));
  if (layered && spec.arch() == Architecture::qwen35)
    describe_layers(spec, out);
}

MtpHandles bind_mtp(const MtpWeights &mtp, const UploadTensorFn &upload,
                    const bonsai_weight *lm_head) {
  const LayerWeights &l = mtp.layer;
  MtpHandles h;
  h.eh_proj = upload(mtp.eh_proj);
  h.wq = upload(l.attn_q);
  h.wk = upload(l.attn_k);
  h.wv = upload(l.attn_v);
  h.wo = upload(l.attn_output);
  h.w_gate = upload(l.ffn_gate);
  h.w_up = upload(l.ffn_up);
  h.w_down = upload(l.ffn_down);
  h.head = mtp.shared_head_head ? upload(*mtp.shared_head_head) : lm_head;
  return h;
}

} // namespace bonsai::binding
