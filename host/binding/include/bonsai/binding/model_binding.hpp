#pragma once
// A model as the backend ABI describes it: the bonsai_weight_desc of each
// tensor and the bonsai_model_desc for bind_model(), built from a ModelSpec
// in one place for the host and for the tests that drive plugins directly.
#include <functional>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "bonsai/core/model_spec.hpp"
#include "bonsai/core/weight_prep.hpp"

namespace bonsai::binding {

// upload_weight()'s description of `tensor` as `prepared` hands it over:
// stored bytes borrowed for the context's life (the caller keeps the mapping
// longer), converted bytes without that flag (the plugin copies them and the
// caller frees them after the call).
bonsai_weight_desc weight_desc(const TensorView &tensor, const PreparedWeight &prepared);

// Uploads one tensor and returns its handle (never NULL); throws on failure.
using UploadTensorFn = std::function<const bonsai_weight *(const TensorView &)>;

// The weights of a qwen35 gated DeltaNet layer, which bind_model()'s
// description has no field for.
struct DeltaNetHandles {
  const bonsai_weight *qkv = nullptr;   // conv input projection
  const bonsai_weight *gate = nullptr;  // z, the output gate
  const bonsai_weight *beta = nullptr;  // beta logits
  const bonsai_weight *alpha = nullptr; // decay logits
  const bonsai_weight *out = nullptr;   // output projection
  // Uploaded only for a plugin with the layer kinds (bind_spec's `layered`):
  const bonsai_weight *conv = nullptr;    // conv taps, one row of K per channel
  const bonsai_weight *dt_bias = nullptr; // per value head
  const bonsai_weight *a = nullptr;       // per value head, -exp(A_log)
  const bonsai_weight *norm = nullptr;    // the output RMSNorm weight
};

// The ABI 1.2 description of a qwen35 model for bind_layered_model(); its
// pointers point into the vectors beside it.
struct LayeredBinding {
  std::vector<bonsai_gated_attention_mixer> attention; // one per attention layer
  std::vector<bonsai_gated_delta_net_mixer> delta_net; // one per DeltaNet layer
  std::vector<bonsai_layer_desc> layers;
  bonsai_layered_model_desc desc{};
};

// The handles of every weight of a model and the bind_model() description
// that points at them. For qwen35, a DeltaNet layer's entry in `layers` has
// only its norms and MLP set (the attention fields NULL), its weights are
// in `delta_net`, `desc` must not be passed to bind_model(), and `layered`
// describes the model for bind_layered_model().
struct ModelBinding {
  std::vector<bonsai_layer_weights> layers;
  std::vector<DeltaNetHandles> delta_net; // qwen35: one per layer, empty for attention layers
  std::vector<double> rope_rates;         // desc.rope_inv_freq
  bonsai_model_desc desc{};               // desc.layers and desc.rope_inv_freq point into this
  LayeredBinding layered;                 // qwen35 only

  ModelBinding() = default;
  ModelBinding(const ModelBinding &) = delete; // desc points into itself
  ModelBinding &operator=(const ModelBinding &) = delete;
};

// Uploads every tensor of `spec` through `upload` (embedding, each layer's
// eleven, output norm, then the head unless it is tied to the embedding) and
// fills `out`: dimensions, RMS epsilon, RoPE base and always the rates and
// magnitude (scaled or not: one path for every 1.1 plugin). With `layered`
// (a plugin with the ABI 1.2 layer kinds), a qwen35 model's DeltaNet conv
// taps and small vectors go up too and `out.layered` describes it; other
// plugins never see those tensors.
void bind_spec(const ModelSpec &spec, const UploadTensorFn &upload, ModelBinding &out,
               bool layered = false);

// The matrices of qwen35's MTP layer (MtpWeights), which no bind
// description has a field for: the host runs the layer through matmul().
struct MtpHandles {
  const bonsai_weight *eh_proj = nullptr;
  const bonsai_weight *wq = nullptr; // query and gate interleaved per head
  const bonsai_weight *wk = nullptr;
  const bonsai_weight *wv = nullptr;
  const bonsai_weight *wo = nullptr;
  const bonsai_weight *w_gate = nullptr;
  const bonsai_weight *w_up = nullptr;
  const bonsai_weight *w_down = nullptr;
  const bonsai_weight *head = nullptr; // nextn.shared_head_head, else `lm_head`
};

// Uploads the MTP layer's matrices through `upload`; `lm_head` is the
// model's uploaded LM head, the head when the layer has none of its own.
MtpHandles bind_mtp(const MtpWeights &mtp, const UploadTensorFn &upload,
                    const bonsai_weight *lm_head);

} // namespace bonsai::binding
