#pragma once
// Uploading a model's weights into one plugin context and describing them
// for bind_model().
#include <memory>
#include <vector>

#include "bonsai/binding/model_binding.hpp"
#include "bonsai/core/model_spec.hpp"
#include "bonsai/engine.hpp"
#include "plugins/plugin_context.hpp"

namespace bonsai::host {

// Handles of every weight in one context (owned by the context; freed when
// it is destroyed), plus the ABI structs that point at them.
using UploadedModel = binding::ModelBinding;

// Uploads every tensor of `spec` with BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT
// (the caller keeps the mapping alive longer than the context), reporting
// progress by bytes, and after each one releases this process's resident
// pages of its bytes in `mapping` (gguf::File::mapping_handle(); empty: no
// release). Throws PluginError naming the tensor on failure.
void upload_model(const PluginContext &context, const std::shared_ptr<const void> &mapping,
                  const ModelSpec &spec, const ProgressFn &progress, UploadedModel &out);

// One more tensor into `context`, as upload_model uploads each (the MTP
// layer's, when a draft first asks for it).
const bonsai_weight *upload_tensor(const PluginContext &context,
                                   const std::shared_ptr<const void> &mapping,
                                   const TensorView &tensor);

} // namespace bonsai::host
