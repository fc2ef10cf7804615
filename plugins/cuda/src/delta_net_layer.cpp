#include "delta_net_layer.hpp"

#include "layer_launch.hpp"

namespace bonsai::cuda {
namespace {

// Channels per conv block (any size works), and value columns per
// delta-rule block: DR_WARPS of kernels/delta_net.cuh.
constexpr unsigned kConvThreads = 256;
constexpr int kRuleColumns = 8;

// Where one sequence's run and this layer's state copies are.
struct SequenceRun {
  int first_token = 0, n_tokens = 0;
  CUdeviceptr read = 0;  // the current state of this layer
  CUdeviceptr write = 0; // the copy end_step makes current
};

void conv(const Context &ctx, const BoundModel &m, const DeltaNetBinding &w,
          const SequenceRun &run) {
  const plugin::DeltaNetDims &g = m.dims.delta_net;
  const Activations &a = m.act;
  const auto channels = static_cast<int>(g.conv_dim());
  LaunchShape shape;
  shape.grid_x = (static_cast<unsigned>(channels) + kConvThreads - 1) / kConvThreads;
  shape.block_x = kConvThreads;
  launch(*ctx.device, ctx.kernels->get("bonsai_delta_net_conv"), shape, w.taps, run.read, run.write,
         row_offset(a.dn_mix.get(), run.first_token, channels),
         row_offset(a.dn_act.get(), run.first_token, channels), channels, g.conv_kernel,
         run.n_tokens);
}

void delta_rule(const Context &ctx, const BoundModel &m, const SequenceRun &run) {
  const plugin::DeltaNetDims &g = m.dims.delta_net;
  const Activations &a = m.act;
  // The heads' states follow the conv window in a layer's state.
  const size_t window_bytes = static_cast<size_t>(g.conv_kernel - 1) * g.conv_dim() * sizeof(float);
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>(g.n_v_heads);
  shape.grid_y = static_cast<unsigned>((g.head_dim + kRuleColumns - 1) / kRuleColumns);
  shape.block_x = 32 * kRuleColumns;
  launch(*ctx.device, ctx.kernels->get("bonsai_delta_rule"), shape,
         row_offset(a.dn_act.get(), run.first_token, g.conv_dim()),
         row_offset(a.dn_beta.get(), run.first_token, g.n_v_heads),
         row_offset(a.dn_decay.get(), run.first_token, g.n_v_heads), run.read + window_bytes,
         run.write + window_bytes, row_offset(a.dn_out.get(), run.first_token, g.value_dim()),
         g.n_k_heads, g.n_v_heads, g.head_dim, run.n_tokens);
}

} // namespace

void delta_net_mixer(const Context &ctx, const BoundModel &m, const LayerBinding &layer, int n,
                     const std::vector<StepSequence> &sequences) {
  const Device &dev = *ctx.device;
  const Kernels &k = *ctx.kernels;
  const ModelDims &d = m.dims;
  const plugin::DeltaNetDims &g = d.delta_net;
  const DeltaNetBinding &w = layer.delta_net;
  const Activations &a = m.act;

  MatmulGroup projections; // one input, several outputs: qkv, z, beta logits
  projections.weights[0] = w.qkv, projections.weights[1] = w.gate, projections.weights[2] = w.beta;
  projections.outs[0] = a.dn_mix.get(), projections.outs[1] = a.dn_z.get();
  projections.outs[2] = a.dn_beta.get();
  projections.n = 3;
  normed_matmuls(ctx, m, projections, layer.attn_norm, n);
  normed_matmuls(ctx, m, single_matmul(*w.alpha, a.dn_decay.get()), layer.attn_norm, n);

  std::vector<SequenceRun> runs;
  for (const StepSequence &s : sequences) {
    const RecurrentState &state = s.slot->recurrent;
    runs.push_back({s.first_token, s.n_tokens, state.layer(state.current, layer.cache_index),
                    state.layer(1 - state.current, layer.cache_index)});
  }
  for (const SequenceRun &run : runs)
    conv(ctx, m, w, run);

  // The q/k norms and gates of every token at once.
  LaunchShape prepare;
  prepare.grid_x = static_cast<unsigned>(2 * g.n_k_heads + 1);
  prepare.grid_y = static_cast<unsigned>(n);
  prepare.block_x = threads_for(g.head_dim);
  launch(dev, k.get("bonsai_delta_net_prepare"), prepare, a.dn_act.get(), a.dn_beta.get(),
         a.dn_decay.get(), w.dt_bias, w.a, g.n_k_heads, g.n_v_heads, g.head_dim,
         static_cast<int>(g.conv_dim()), d.rms_eps);

  for (const SequenceRun &run : runs)
    delta_rule(ctx, m, run);

  LaunchShape norm;
  norm.grid_x = static_cast<unsigned>(g.n_v_heads);
  norm.grid_y = static_cast<unsigned>(n);
  norm.block_x = threads_for(g.head_dim);
  launch(dev, k.get("bonsai_delta_net_gated_norm"), norm, a.dn_out.get(), a.dn_z.get(), w.norm,
         g.n_v_heads, g.head_dim, d.rms_eps);
  residual_matmul(ctx, m, *w.out, a.dn_out.get(), a.x.get(), n);
}

} // namespace bonsai::cuda
