#include "model_upload.hpp"

#include <fmt/format.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/weight_prep.hpp"

namespace bonsai::host {
namespace {

class Uploader {
public:
  Uploader(const PluginContext &context, const ModelSpec &spec, const ProgressFn &progress)
      : context_(context), progress_(progress), total_bytes_(spec.weight_bytes()) {}

  const bonsai_weight *upload(const TensorView &tensor) {
    const auto &api = context_.api();
    // Hand over the stored bytes when the plugin takes the encoding, else
    // an exact conversion to one it computes with.
    PreparedWeight prepared;
    try {
      prepared = prepare_weight(tensor, [&](GgmlType type) {
        return api.supports_type == nullptr
                   ? type == tensor.type
                   : api.supports_type(context_.get(), static_cast<uint32_t>(type)) == BONSAI_OK;
      });
    } catch (const Error &e) {
      context_.library().fail(e.what());
    }
    bonsai_weight_desc desc{};
    desc.struct_size = sizeof desc;
    desc.type = static_cast<uint32_t>(prepared.type);
    desc.cols = tensor.cols();
    desc.rows = tensor.rows();
    desc.data = prepared.data;
    desc.nbytes = prepared.nbytes;
    // Converted bytes are freed after the call: the plugin copies them.
    desc.flags = prepared.converted() ? 0u : BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT;
    desc.name = tensor.name.c_str();
    bonsai_weight *handle = nullptr;
    context_.check(api.upload_weight(context_.get(), &desc, &handle),
                   fmt::format("upload_weight({})", tensor.name));
    if (handle == nullptr)
      context_.library().fail(
          fmt::format("upload_weight({}) returned OK but no handle", tensor.name));
    done_bytes_ += tensor.nbytes;
    if (progress_ && total_bytes_ > 0)
      progress_(
          std::min(1.0, static_cast<double>(done_bytes_) / static_cast<double>(total_bytes_)));
    return handle;
  }

private:
  const PluginContext &context_;
  const ProgressFn &progress_;
  size_t total_bytes_ = 0;
  size_t done_bytes_ = 0;
};

} // namespace

void upload_model(const PluginContext &context, const ModelSpec &spec, const ProgressFn &progress,
                  UploadedModel &out) {
  if (progress)
    progress(0.0);
  Uploader uploader(context, spec, progress);
  out.token_embd = uploader.upload(spec.token_embd);
  out.layers.clear();
  out.layers.reserve(spec.layers.size());
  for (const auto &layer : spec.layers) {
    bonsai_layer_weights w{};
    w.struct_size = sizeof w;
    w.attn_norm = uploader.upload(layer.attn_norm);
    w.wq = uploader.upload(layer.attn_q);
    w.wk = uploader.upload(layer.attn_k);
    w.wv = uploader.upload(layer.attn_v);
    w.q_norm = uploader.upload(layer.attn_q_norm);
    w.k_norm = uploader.upload(layer.attn_k_norm);
    w.wo = uploader.upload(layer.attn_output);
    w.ffn_norm = uploader.upload(layer.ffn_norm);
    w.w_gate = uploader.upload(layer.ffn_gate);
    w.w_up = uploader.upload(layer.ffn_up);
    w.w_down = uploader.upload(layer.ffn_down);
    out.layers.push_back(w);
  }
  out.output_norm = uploader.upload(spec.output_norm);
  out.lm_head = spec.output ? uploader.upload(*spec.output) : out.token_embd;

  const auto &hp = spec.hparams;
  bonsai_model_desc &desc = out.desc;
  desc = bonsai_model_desc{};
  desc.struct_size = sizeof desc;
  desc.n_embd = static_cast<int32_t>(hp.n_embd);
  desc.n_layer = static_cast<int32_t>(hp.n_layer);
  desc.n_head = static_cast<int32_t>(hp.n_head);
  desc.n_head_kv = static_cast<int32_t>(hp.n_head_kv);
  desc.head_dim = static_cast<int32_t>(hp.head_dim);
  desc.n_ff = static_cast<int32_t>(hp.n_ff);
  desc.n_vocab = static_cast<int32_t>(hp.n_vocab);
  desc.rms_eps = hp.rms_eps;
  desc.rope_freq_base = hp.rope.freq_base;
  desc.token_embd = out.token_embd;
  desc.output_norm = out.output_norm;
  desc.lm_head = out.lm_head;
  desc.layers = out.layers.data();
  // Always the rates, scaled or not: one path for every 1.1 plugin.
  out.rope_rates = rope_inv_freq(hp.rope, hp.head_dim);
  desc.rope_inv_freq = out.rope_rates.data();
  desc.rope_magnitude = static_cast<float>(rope_magnitude(hp.rope));
  if (progress)
    progress(1.0);
}

} // namespace bonsai::host
