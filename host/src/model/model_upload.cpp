#include "model/model_upload.hpp"

#include <fmt/format.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/weight_prep.hpp"
#include "plugins/layer_kinds.hpp"

namespace bonsai::host {
namespace {

class Uploader {
public:
  Uploader(const PluginContext &context, const std::shared_ptr<const void> &mapping,
           const ProgressFn &progress, size_t total_bytes)
      : context_(context), mapping_(mapping), progress_(progress), total_bytes_(total_bytes) {}

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
    const bonsai_weight_desc desc = binding::weight_desc(tensor, prepared);
    bonsai_weight *handle = nullptr;
    context_.check(api.upload_weight(context_.get(), &desc, &handle),
                   fmt::format("upload_weight({})", tensor.name));
    if (handle == nullptr)
      context_.library().fail(
          fmt::format("upload_weight({}) returned OK but no handle", tensor.name));
    // A plugin that copied the bytes (the CUDA plugin, to the device), or a
    // conversion above that read them, touched these pages of the file: give
    // them back, so resident memory holds the copy, not both. Bytes a plugin
    // uses in place (the CPU plugin) fault back in when it reads them.
    gguf::File::release_resident_pages(mapping_, tensor.data, tensor.nbytes);
    done_bytes_ += tensor.nbytes;
    if (progress_ && total_bytes_ > 0)
      progress_(
          std::min(1.0, static_cast<double>(done_bytes_) / static_cast<double>(total_bytes_)));
    return handle;
  }

private:
  const PluginContext &context_;
  const std::shared_ptr<const void> &mapping_;
  const ProgressFn &progress_;
  size_t total_bytes_ = 0;
  size_t done_bytes_ = 0;
};

} // namespace

void upload_model(const PluginContext &context, const std::shared_ptr<const void> &mapping,
                  const ModelSpec &spec, const ProgressFn &progress, UploadedModel &out) {
  if (progress)
    progress(0.0);
  Uploader uploader(context, mapping, progress, spec.weight_bytes());
  binding::bind_spec(
      spec, [&uploader](const TensorView &tensor) { return uploader.upload(tensor); }, out,
      qwen35_layer_kinds(context.api()) != nullptr);
  if (progress)
    progress(1.0);
}

const bonsai_weight *upload_tensor(const PluginContext &context,
                                   const std::shared_ptr<const void> &mapping,
                                   const TensorView &tensor) {
  return Uploader(context, mapping, {}, tensor.nbytes).upload(tensor);
}

} // namespace bonsai::host
