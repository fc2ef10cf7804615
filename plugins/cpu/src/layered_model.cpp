#include "layered_model.hpp"

#include "bonsai/plugin/abi_checks.hpp"
#include "bonsai/plugin/layered_bind.hpp"
#include "bonsai/plugin/layered_desc.hpp"
#include "plugin_error.hpp"
#include "weight_binder.hpp"

namespace bonsai::cpu {
namespace {

constexpr const char *kCall = plugin::kBindLayeredCall;

// Every kind supported and each kind's shape the same in every layer;
// fills the dims.
plugin::LayeredShapes read_shapes(const bonsai_layered_model_desc &desc, ModelDims &d) {
  plugin::LayeredShapes shapes = plugin::read_layered_shapes(desc, "CPU");
  d.n_kv_layers = shapes.n_attention;
  d.n_state_layers = shapes.n_delta_net;
  if (const auto &a = shapes.attention) {
    d.n_head = a->n_head;
    d.n_head_kv = a->n_head_kv;
    d.head_dim = a->head_dim;
    d.n_rot = a->n_rot;
    d.rope = a->rope;
  }
  if (const auto &g = shapes.delta_net)
    d.delta_net = {g->conv_kernel, g->n_k_heads, g->n_v_heads, g->head_dim, d.rms_eps};
  return shapes;
}

} // namespace

bool supports_mixer_kind(uint32_t kind) {
  return kind == BONSAI_MIXER_GATED_ATTENTION || kind == BONSAI_MIXER_GATED_DELTA_NET;
}

std::unique_ptr<BoundModel> bind_layered_model(const bonsai_layered_model_desc &desc,
                                               const WeightLookup &lookup,
                                               const BindLimits &limits) {
  plugin::check_layered_dims(desc);
  auto model = std::make_unique<BoundModel>();
  ModelDims &d = model->dims;
  d.n_embd = desc.n_embd;
  d.n_layer = desc.n_layer;
  d.n_ff = desc.n_ff;
  d.n_vocab = desc.n_vocab;
  d.rms_eps = desc.rms_eps;
  const plugin::LayeredShapes shapes = read_shapes(desc, d);

  Binder binder(lookup, *model, kCall);
  model->token_embd = &binder.matrix(desc.token_embd, "token_embd", d.n_vocab, d.n_embd);
  model->lm_head = &binder.matrix(desc.lm_head, "lm_head", d.n_vocab, d.n_embd);
  model->output_norm = binder.vector(desc.output_norm, "output_norm", d.n_embd);
  model->layers = plugin::bind_layered_layers<LayerBinding>(
      desc, shapes, binder, [](const LayerBinding &l, int i) {
        if (l.w_gate->type != l.w_up->type)
          fail_invalid(
              strformat("%s: layers[%d] w_gate and w_up must have the same type", kCall, i));
      });
  BindLimits chosen = limits;
  if (limits.kv_type_for_head_dim && d.n_kv_layers > 0)
    chosen.kv_type = limits.kv_type_for_head_dim(d.head_dim);
  allocate_model(*model, chosen);
  return model;
}

} // namespace bonsai::cpu
