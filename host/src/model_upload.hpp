#pragma once
// Uploading a model's weights into one plugin context and describing them
// for bind_model().
#include <vector>

#include "bonsai/core/model_spec.hpp"
#include "bonsai/engine.hpp"
#include "plugin_context.hpp"

namespace bonsai::host {

// Handles of every weight in one context (owned by the context; freed when
// it is destroyed), plus the ABI structs that point at them.
struct UploadedModel {
  const bonsai_weight *token_embd = nullptr;
  const bonsai_weight *output_norm = nullptr;
  const bonsai_weight *lm_head = nullptr; // == token_embd when tied
  std::vector<bonsai_layer_weights> layers;
  std::vector<double> rope_rates; // the model's RoPE rates (desc.rope_inv_freq)
  bonsai_model_desc desc{};       // desc.layers and desc.rope_inv_freq point into this

  UploadedModel() = default;
  UploadedModel(const UploadedModel &) = delete; // desc points into itself
  UploadedModel &operator=(const UploadedModel &) = delete;
};

// Uploads every tensor of `spec` with BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT
// (the caller keeps the mapping alive longer than the context), reporting
// progress by bytes. Throws PluginError naming the tensor on failure.
void upload_model(const PluginContext &context, const ModelSpec &spec, const ProgressFn &progress,
                  UploadedModel &out);

} // namespace bonsai::host
