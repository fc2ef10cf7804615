#include "plugin_model.hpp"

#include <stdexcept>

#include "bonsai/core/weight_prep.hpp"

namespace bonsai::test {

PluginModel::PluginModel(const bonsai_backend_api &api, const std::string &gguf_path,
                         const ContextConfig &config)
    : api_(api), file_(gguf::File::open(gguf_path)), spec_(ModelSpec::from_gguf(file_)),
      ctx_(api, config) {
  const Qwen3Hparams &hp = spec_.hparams;
  bonsai_model_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.n_embd = static_cast<int32_t>(hp.n_embd);
  desc.n_layer = static_cast<int32_t>(hp.n_layer);
  desc.n_head = static_cast<int32_t>(hp.n_head);
  desc.n_head_kv = static_cast<int32_t>(hp.n_head_kv);
  desc.head_dim = static_cast<int32_t>(hp.head_dim);
  desc.n_ff = static_cast<int32_t>(hp.n_ff);
  desc.n_vocab = static_cast<int32_t>(hp.n_vocab);
  desc.rms_eps = hp.rms_eps;
  desc.rope_freq_base = hp.rope.freq_base;
  desc.token_embd = upload(spec_.token_embd);
  desc.output_norm = upload(spec_.output_norm);
  desc.lm_head = spec_.tied() ? desc.token_embd : upload(*spec_.output);
  for (const LayerWeights &l : spec_.layers) {
    bonsai_layer_weights lw{};
    lw.struct_size = sizeof(lw);
    lw.attn_norm = upload(l.attn_norm);
    lw.wq = upload(l.attn_q);
    lw.wk = upload(l.attn_k);
    lw.wv = upload(l.attn_v);
    lw.q_norm = upload(l.attn_q_norm);
    lw.k_norm = upload(l.attn_k_norm);
    lw.wo = upload(l.attn_output);
    lw.ffn_norm = upload(l.ffn_norm);
    lw.w_gate = upload(l.ffn_gate);
    lw.w_up = upload(l.ffn_up);
    lw.w_down = upload(l.ffn_down);
    layers_.push_back(lw);
  }
  desc.layers = layers_.data();
  const std::vector<double> rope_rates = rope_inv_freq(hp.rope, hp.head_dim); // bind copies them
  desc.rope_inv_freq = rope_rates.data();
  desc.rope_magnitude = static_cast<float>(rope_magnitude(hp.rope));
  StepRunner(api_, ctx_.get(), desc.n_layer, desc.n_vocab)
      .check(api_.bind_model(ctx_.get(), &desc), "bind_model");
}

const bonsai_weight *PluginModel::upload(const TensorView &tensor) {
  // As the host does: the stored encoding, or an exact conversion.
  const PreparedWeight prepared = prepare_weight(tensor, [&](GgmlType type) {
    return api_.supports_type(ctx_.get(), static_cast<uint32_t>(type)) == BONSAI_OK;
  });
  bonsai_weight_desc d{};
  d.struct_size = sizeof(d);
  d.type = static_cast<uint32_t>(prepared.type);
  d.cols = tensor.cols();
  d.rows = tensor.rows();
  d.data = prepared.data;
  d.nbytes = prepared.nbytes;
  d.flags = prepared.converted() ? 0u : BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT;
  d.name = tensor.name.c_str();
  bonsai_weight *handle = nullptr;
  StepRunner(api_, ctx_.get(), 0, 0)
      .check(api_.upload_weight(ctx_.get(), &d, &handle), "upload_weight " + tensor.name);
  return handle;
}

StepRunner PluginModel::runner() const {
  return StepRunner(api_, ctx_.get(), static_cast<int>(spec_.hparams.n_layer),
                    static_cast<int>(spec_.hparams.n_vocab));
}

void PluginModel::reset_kv() const {
  runner().check(api_.kv_reset(ctx_.get()), "kv_reset");
}

} // namespace bonsai::test
