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

void bind_spec(const ModelSpec &spec, const UploadTensorFn &upload, ModelBinding &out) {
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
      gdn = {upload(d->qkv), upload(d->gate), upload(d->beta), upload(d->alpha), upload(d->out)};
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
}

} // namespace bonsai::binding
