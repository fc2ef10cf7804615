#include "tune_runs.hpp"

#include "layer_launch.hpp"
#include "persistent_step.hpp"
#include "plugin_error.hpp"
#include "step_paths.hpp"

namespace bonsai::cuda {
namespace {

void queue_embedding(const Context &ctx, const BoundModel &m, int n_tokens) {
  launch_get_rows(*ctx.device, *ctx.kernels, *m.token_embd, m.act.token_ids.get(), m.act.x.get(),
                  n_tokens);
}

void queue_layers(const Context &ctx, const BoundModel &m, const StepState &step) {
  queue_embedding(ctx, m, step.n_tokens);
  for (int l = 0; l < m.dims.n_layer; ++l)
    run_layer(ctx, m, l, step.n_tokens, step.sequences);
}

// The final norm, the LM head and the argmax of every token of the step, as
// step_lm_head launches them (a step of the tuner has at most 8 tokens, one
// pass of kLogitRows).
void queue_head(const Context &ctx, const BoundModel &m, int n_tokens) {
  const ModelDims &d = m.dims;
  const Activations &a = m.act;
  launch_rmsnorm(ctx, a.x.get(), m.output_norm, a.h.get(), n_tokens, d.n_embd, d.rms_eps);
  launch_matmul(*ctx.device, *ctx.kernels, *m.lm_head,
                {a.h.get(), a.logits.get(), n_tokens, a.int8_input.get()}, false);
  LaunchShape shape;
  shape.grid_x = static_cast<unsigned>(n_tokens);
  shape.block_x = 256; // the kernel's shared arrays hold 256 entries
  launch(*ctx.device, ctx.kernels->get("bonsai_argmax"), shape, a.logits.get(), d.n_vocab,
         a.argmax.get());
}

} // namespace

void queue_reference_run(const Context &ctx, const BoundModel &m, const StepState &step) {
  queue_layers(ctx, m, step);
  queue_head(ctx, m, step.n_tokens);
}

void queue_choice_run(Context &ctx, BoundModel &m, const StepState &step,
                      const DecodeChoice &choice) {
  StepState run = step;
  run.persistent = choice.persistent;
  run.variant = choice.variant;
  if (choice.persistent) {
    queue_embedding(ctx, m, step.n_tokens);
    launch_persistent_step(ctx, m, run);
    if (!head_in_launch(*m.persistent, run.variant))
      queue_head(ctx, m, step.n_tokens);
    return;
  }
  if (graph_step_applies(ctx, m, run)) {
    if (!m.decode_graph.ready())
      capture_decode_graph(ctx, m);
    ctx.device->check(ctx.device->api().cuGraphLaunch(m.decode_graph.exec(), ctx.device->stream()),
                      "cuGraphLaunch");
  } else {
    queue_layers(ctx, m, step);
  }
  queue_head(ctx, m, step.n_tokens);
}

std::string run_failure(const BoundModel &m, const DecodeChoice &choice) {
  if (!choice.persistent)
    return {};
  const PersistentStatus status = *m.persistent->status.get();
  if (status.abort == 0)
    return {};
  return strformat("its launch stalled (block %d waited at instruction %d for counter %d to "
                   "reach %d; it stayed at %d)",
                   status.block, status.instr, status.counter, status.target, status.observed);
}

StepOutputs read_step_outputs(const Context &ctx, const BoundModel &m, int n_tokens) {
  StepOutputs out;
  out.n_tokens = n_tokens;
  out.n_vocab = m.dims.n_vocab;
  out.logits.resize(static_cast<size_t>(n_tokens) * static_cast<size_t>(out.n_vocab));
  out.argmax.resize(static_cast<size_t>(n_tokens));
  ctx.device->download(out.logits.data(), m.act.logits.get(), out.logits.size() * sizeof(float));
  ctx.device->download(out.argmax.data(), m.act.argmax.get(), out.argmax.size() * sizeof(int32_t));
  return out;
}

} // namespace bonsai::cuda
