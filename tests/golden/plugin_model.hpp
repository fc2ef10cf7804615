#pragma once
// A GGUF model loaded through a plugin: the mapped file, its ModelSpec, one
// context with every weight uploaded by pointer (the mapping outlives the
// context) and the model bound: bind_model for qwen3, bind_layered_model
// (ABI 1.2 layer kinds) for qwen35; a plugin without them cannot load a
// qwen35 file here (the constructor throws).
#include <string>
#include <vector>

#include "bonsai/binding/model_binding.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"
#include "plugin_loader.hpp"
#include "step_runner.hpp"

namespace bonsai::test {

class PluginModel {
public:
  // Throws std::runtime_error (or bonsai::Error for a bad file).
  PluginModel(const bonsai_backend_api &api, const std::string &gguf_path,
              const ContextConfig &config);

  const ModelSpec &spec() const { return spec_; }
  // What the model was bound with (weights, descriptions).
  const binding::ModelBinding &binding() const { return binding_; }
  bonsai_context *ctx() const { return ctx_.get(); }
  StepRunner runner() const;
  void reset_kv() const;
  // One more tensor into the context (the MTP layer's), as the model's went.
  const bonsai_weight *upload_tensor(const TensorView &tensor) { return upload(tensor); }

private:
  const bonsai_weight *upload(const TensorView &tensor);

  const bonsai_backend_api &api_;
  gguf::File file_; // declared before ctx_: the context is destroyed first
  ModelSpec spec_;
  ContextHandle ctx_;
  binding::ModelBinding binding_; // what bind_model was given
};

} // namespace bonsai::test
