#include "plugin_model.hpp"

#include <stdexcept>

#include "bonsai/core/weight_prep.hpp"

namespace bonsai::test {

PluginModel::PluginModel(const bonsai_backend_api &api, const std::string &gguf_path,
                         const ContextConfig &config)
    : api_(api), file_(gguf::File::open(gguf_path)), spec_(ModelSpec::from_gguf(file_)),
      ctx_(api, config) {
  binding::bind_spec(
      spec_, [this](const TensorView &tensor) { return upload(tensor); }, binding_,
      layer_kinds_extension(api) != nullptr);
  const bonsai_model_desc &desc = binding_.desc;
  const StepRunner checker(api_, ctx_.get(), desc.n_layer, desc.n_vocab);
  if (spec_.arch() != Architecture::qwen35) {
    checker.check(api_.bind_model(ctx_.get(), &desc), "bind_model");
    return;
  }
  const bonsai_layer_kinds_extension *kinds = layer_kinds_extension(api_);
  if (kinds == nullptr)
    throw std::runtime_error("the plugin has no layer-kinds extension (ABI 1.2)");
  checker.check(kinds->bind_layered_model(ctx_.get(), &binding_.layered.desc),
                "bind_layered_model");
}

const bonsai_weight *PluginModel::upload(const TensorView &tensor) {
  // As the host does: the stored encoding, or an exact conversion.
  const PreparedWeight prepared = prepare_weight(tensor, [&](GgmlType type) {
    return api_.supports_type(ctx_.get(), static_cast<uint32_t>(type)) == BONSAI_OK;
  });
  const bonsai_weight_desc d = binding::weight_desc(tensor, prepared);
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
