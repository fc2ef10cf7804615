#pragma once
// Uploading a model's weights into one plugin context and describing them
// for bind_model().
#include <vector>

#include "bonsai/binding/model_binding.hpp"
#include "bonsai/core/model_spec.hpp"
#include "bonsai/engine.hpp"
#include "plugin_context.hpp"

namespace bonsai::host {

// Handles of every weight in one context (owned by the context; freed when
// it is destroyed), plus the ABI structs that point at them.
using UploadedModel = binding::ModelBinding;

// Uploads every tensor of `spec` with BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT
// (the caller keeps the mapping alive longer than the context), reporting
// progress by bytes. Throws PluginError naming the tensor on failure.
void upload_model(const PluginContext &context, const ModelSpec &spec, const ProgressFn &progress,
                  UploadedModel &out);

} // namespace bonsai::host
