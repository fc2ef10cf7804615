// bind_layered_model (ABI 1.2 layer kinds) on the GPU: qwen35's gated
// attention and gated DeltaNet layers, read with the plugins' shared
// description checks and layer walk (plugins/common, layered_desc.hpp and
// layered_bind.hpp).
#include <memory>

#include "bonsai/plugin/layered_bind.hpp"
#include "bonsai/plugin/layered_desc.hpp"
#include "bonsai/plugin/rope_rates.hpp"
#include "model.hpp"
#include "model_binder.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

using plugin::kBindLayeredCall;

// The kernels' limits: the conv window in registers (DN_MAX_CONV) and the
// delta rule's rows per lane (DR_MAX_ROWS x 32) in kernels/delta_net.cuh;
// the attention kernels' per-head arrays (bind_model's head limit).
constexpr int kMaxConvKernel = 8;
constexpr int kMaxDeltaNetHeadDim = 256;
constexpr int kMaxAttentionHeadDim = 1024;

void check_kernel_limits(const plugin::LayeredShapes &shapes) {
  if (const auto &g = shapes.delta_net) {
    if (g->conv_kernel > kMaxConvKernel)
      fail(BONSAI_ERR_UNSUPPORTED,
           strformat("%s: a DeltaNet conv of width %d; the CUDA plugin runs up to %d",
                     kBindLayeredCall, g->conv_kernel, kMaxConvKernel));
    if (g->head_dim > kMaxDeltaNetHeadDim)
      fail(BONSAI_ERR_UNSUPPORTED,
           strformat("%s: DeltaNet heads of %d; the CUDA plugin runs up to %d", kBindLayeredCall,
                     g->head_dim, kMaxDeltaNetHeadDim));
  }
  if (const auto &a = shapes.attention; a && a->head_dim > kMaxAttentionHeadDim)
    fail(BONSAI_ERR_UNSUPPORTED,
         strformat("%s: attention heads of %d; the CUDA plugin runs up to %d", kBindLayeredCall,
                   a->head_dim, kMaxAttentionHeadDim));
}

std::unique_ptr<BoundModel> resolve_layered(const Device &device, const Kernels &kernels,
                                            const bonsai_layered_model_desc &desc,
                                            const WeightLookup &find, const BindLimits &limits,
                                            bool dry_run) {
  plugin::check_layered_dims(desc);
  const plugin::LayeredShapes shapes = plugin::read_layered_shapes(desc, "CUDA");
  check_kernel_limits(shapes);
  auto model = std::make_unique<BoundModel>(device.api());
  model->layered = true;
  ModelDims &d = model->dims;
  d.n_embd = desc.n_embd;
  d.n_layer = desc.n_layer;
  d.n_ff = desc.n_ff;
  d.n_vocab = desc.n_vocab;
  d.rms_eps = desc.rms_eps;
  d.n_kv_layers = shapes.n_attention;
  d.n_state_layers = shapes.n_delta_net;
  if (const auto &a = shapes.attention) {
    d.n_head = a->n_head;
    d.n_head_kv = a->n_head_kv;
    d.head_dim = a->head_dim;
    d.n_rot = a->n_rot;
    d.rope_magnitude = static_cast<float>(a->rope.magnitude);
    if (!dry_run) {
      const size_t bytes = a->rope.inv_freq.size() * sizeof(double);
      model->rope_rates = DeviceBuffer(device, bytes, "RoPE rates");
      device.upload(model->rope_rates.get(), a->rope.inv_freq.data(), bytes);
    }
  }
  if (const auto &g = shapes.delta_net)
    d.delta_net = *g;
  model->max_context = limits.max_context;
  model->max_batch = limits.max_batch;
  model->kv_bytes = limits.kv_f16 ? 2 : 4;
  set_attention_splits(*model);

  ModelBinder bind{device, kernels, find, *model, dry_run, kBindLayeredCall};
  model->token_embd = &bind.matrix(desc.token_embd, "token_embd", d.n_vocab, d.n_embd);
  model->lm_head = &bind.matrix(desc.lm_head, "lm_head", d.n_vocab, d.n_embd);
  model->output_norm = bind.vector(desc.output_norm, "output_norm", d.n_embd);
  model->layers = plugin::bind_layered_layers<LayerBinding>(
      desc, shapes, bind, [](const LayerBinding &l, int i) {
        if (l.w_gate->layout.type != l.w_up->layout.type)
          fail(BONSAI_ERR_UNSUPPORTED,
               strformat("%s: layers[%d] gate and up projections have different types (%u, %u); "
                         "the fused SwiGLU kernel needs one type",
                         kBindLayeredCall, i, l.w_gate->layout.type, l.w_up->layout.type));
      });
  if (!dry_run)
    allocate_activations(device, *model);
  return model;
}

} // namespace

void validate_layered_model(const Device &device, const Kernels &kernels,
                            const bonsai_layered_model_desc &desc, const WeightLookup &find,
                            const BindLimits &limits) {
  resolve_layered(device, kernels, desc, find, limits, true);
}

std::unique_ptr<BoundModel> bind_layered_model(const Device &device, const Kernels &kernels,
                                               const bonsai_layered_model_desc &desc,
                                               const WeightLookup &find, const BindLimits &limits) {
  return resolve_layered(device, kernels, desc, find, limits, false);
}

} // namespace bonsai::cuda
