#include "delta_net_layer.hpp"

#include <oneapi/tbb/parallel_for.h>

namespace bonsai::cpu {
namespace {

// Where one sequence's tokens and its layer state are.
struct SequenceState {
  const StepSequence *sequence = nullptr;
  const float *read = nullptr; // the current state of this layer
  float *write = nullptr;      // the copy end_step will make current
};

// Conv, SiLU, q/k norms and the gates over the sequence's tokens.
void conv_and_gates(const BoundModel &m, const DeltaNetBinding &w, const SequenceState &s) {
  const DeltaNetShape &shape = m.dims.delta_net;
  const StepBuffers &b = m.buffers;
  const int64_t row = s.sequence->first_token;
  DeltaNetConvRun run;
  run.n_tokens = s.sequence->n_tokens;
  run.taps = w.taps.data();
  run.dt_bias = w.dt_bias.data();
  run.a = w.a.data();
  run.window_in = s.read;
  run.window_out = s.write;
  run.mix = b.mix.get() + row * shape.conv_dim();
  run.act = b.act.get() + row * shape.conv_dim();
  run.beta = b.beta.get() + row * shape.n_v_heads;
  run.decay = b.decay.get() + row * shape.n_v_heads;
  delta_net_conv_run(shape, run);
}

// The delta rule for every value head, heads in parallel; each head runs
// the sequence's tokens in order.
void recurrence(Context &ctx, const SequenceState &s) {
  const BoundModel &m = *ctx.model;
  const DeltaNetShape &shape = m.dims.delta_net;
  const StepBuffers &b = m.buffers;
  const int64_t head_floats = int64_t{shape.head_dim} * shape.head_dim;
  const int64_t window = shape.window_floats();
  const int64_t row = s.sequence->first_token;
  const auto run_head = [&](int h) {
    DeltaRuleRun run;
    run.head = h;
    run.n_tokens = s.sequence->n_tokens;
    run.act = b.act.get() + row * shape.conv_dim();
    run.beta = b.beta.get() + row * shape.n_v_heads;
    run.decay = b.decay.get() + row * shape.n_v_heads;
    run.state_in = s.read + window + h * head_floats;
    run.state_out = s.write + window + h * head_floats;
    run.scratch = b.rule_scratch.get() + int64_t{h} * shape.head_dim;
    run.out = b.mixed.get() + row * shape.value_dim();
    delta_rule_run(shape, run);
  };
  ctx.arena->execute([&] { oneapi::tbb::parallel_for(0, shape.n_v_heads, run_head); });
}

} // namespace

void delta_net_mixer(Context &ctx, const LayerBinding &l) {
  BoundModel &m = *ctx.model;
  const ModelDims &d = m.dims;
  const DeltaNetShape &shape = d.delta_net;
  const DeltaNetBinding &w = l.delta_net;
  StepBuffers &b = m.buffers;
  MatmulRunner runner = ctx.runner();
  const int n_tokens = ctx.step.n_tokens;
  {
    ActInput in(b.h.get(), d.n_embd, n_tokens, d.n_embd, b.acts);
    runner.run(in, {{w.qkv, b.mix.get(), shape.conv_dim()},
                    {w.gate, b.z.get(), shape.value_dim()},
                    {w.beta, b.beta.get(), shape.n_v_heads},
                    {w.alpha, b.decay.get(), shape.n_v_heads}});
  }
  for (const StepSequence &sequence : ctx.step.sequences) {
    const RecurrentState &state = sequence.kv->recurrent;
    SequenceState s;
    s.sequence = &sequence;
    s.read = state.layer(state.current, l.cache_index);
    s.write = state.layer(1 - state.current, l.cache_index);
    conv_and_gates(m, w, s);
    recurrence(ctx, s);
  }
  for (int t = 0; t < n_tokens; ++t)
    delta_net_gated_norm(shape, w.norm.data(), b.z.get() + int64_t{t} * shape.value_dim(),
                         b.mixed.get() + int64_t{t} * shape.value_dim());
  ActInput in(b.mixed.get(), shape.value_dim(), n_tokens, shape.value_dim(), b.acts);
  runner.run(in, {{w.out, b.h.get(), d.n_embd}});
}

} // namespace bonsai::cpu
