#include "step.hpp"

#include <vector>

#include "bonsai/plugin/abi_checks.hpp"
#include "bonsai/plugin/sequence_checks.hpp"
#include "bonsai/plugin/slot_table.hpp"

#include "forward.hpp"
#include "plugin_error.hpp"

namespace bonsai::cpu {
namespace {

void require_open_step(const Context &ctx, const char *call) {
  if (!ctx.step.open)
    fail_state(strformat("%s: no step is open; call begin_step first", call));
  if (ctx.step.failed)
    fail_state(strformat("%s: the open step failed earlier; call begin_step to start again", call));
}

// Checks one sequence of a step against its slot and appends it to the step
// being built. `call` names it in messages; `index` is its entry in a
// batch, or -1 for begin_step's single sequence.
void add_sequence(Context &ctx, const SequenceRequest &request, const char *call, int index) {
  BoundModel &m = *ctx.model;
  KvCache &kv = m.slots.at(request.slot, call);
  StepState &step = ctx.step;
  const int32_t length = kv.length;
  check_sequence_request(request, length, step.n_tokens,
                         {ctx.max_batch, ctx.max_context, m.dims.n_vocab}, call, index);
  if (!kv.state_ready())
    fail_state(strformat("%s: slot %d was cut back to %d positions, but a recurrent state "
                         "cannot be: restore a checkpoint onto it first (docs/abi.md)",
                         call, request.slot, length));
  for (const StepSequence &other : step.sequences)
    if (other.kv == &kv)
      fail_invalid(strformat("%s: sequences[%d]: slot %d appears twice in one step", call, index,
                             request.slot));
  StepSequence sequence;
  sequence.kv = &kv;
  sequence.first_token = step.n_tokens;
  sequence.n_tokens = request.n_tokens;
  sequence.first_pos = length;
  step.sequences.push_back(sequence);
  step.token_ids.insert(step.token_ids.end(), request.token_ids,
                        request.token_ids + request.n_tokens);
  step.positions.insert(step.positions.end(), request.positions,
                        request.positions + request.n_tokens);
  step.n_tokens += request.n_tokens;
}

// Discards any open step, lets add_sequences(ctx) add the new step's
// sequences (a failure leaves no step open), then embeds their tokens and
// opens the step.
template <class AddSequences> void open_step(Context &ctx, AddSequences &&add_sequences) {
  if (ctx.step.open)
    ctx.log.debug("bonsai_cpu: a new step discards a step that was never ended");
  ctx.step.close();
  try {
    add_sequences();
  } catch (...) {
    ctx.step.close();
    throw;
  }
  StepState &step = ctx.step;
  embed_tokens(*ctx.model, step.token_ids.data(), step.positions.data(), step.n_tokens);
  step.open = true;
}

} // namespace

void step_begin(Context &ctx, const bonsai_step_desc &desc) {
  bound_model(ctx, "begin_step");
  open_step(ctx, [&] {
    add_sequence(ctx, {0, desc.n_tokens, desc.token_ids, desc.positions}, "begin_step", -1);
  });
}

void step_begin_batch(Context &ctx, const bonsai_batch_step_desc &batch) {
  bound_model(ctx, "begin_batch");
  const std::vector<SequenceRequest> requests = read_batch_requests(batch);
  open_step(ctx, [&] {
    for (size_t i = 0; i < requests.size(); ++i)
      add_sequence(ctx, requests[i], "begin_batch", static_cast<int>(i));
  });
}

void step_encode_layer(Context &ctx, int32_t layer) {
  BoundModel &m = bound_model(ctx, "encode_layer");
  if (layer < 0 || layer >= m.dims.n_layer)
    fail_invalid(
        strformat("encode_layer: layer %d is out of range [0, %d)", layer, m.dims.n_layer));
  require_open_step(ctx, "encode_layer");
  if (layer != ctx.step.next_layer)
    fail_state(strformat("encode_layer: layer %d called out of order; layer %d is next", layer,
                         ctx.step.next_layer));
  try {
    forward_layer(ctx, layer);
  } catch (...) {
    ctx.step.failed = true;
    throw;
  }
  ++ctx.step.next_layer;
}

// The open step, all of whose layers have run (what reads its last states
// needs); BAD_STATE naming `call` otherwise.
void require_last_layer_done(Context &ctx, const char *call) {
  BoundModel &m = bound_model(ctx, call);
  require_open_step(ctx, call);
  if (ctx.step.next_layer != m.dims.n_layer)
    fail_state(strformat("%s: only %d of %d layers are encoded in this step", call,
                         ctx.step.next_layer, m.dims.n_layer));
}

void step_lm_head(Context &ctx, const bonsai_lm_head_desc &desc) {
  require_last_layer_done(ctx, "lm_head");
  check_lm_head_desc(desc, ctx.step.n_tokens);
  LmHeadRequest request;
  request.first_token = desc.first_token;
  request.n_outputs = desc.n_outputs;
  request.logits = desc.logits;
  request.argmax = desc.argmax;
  forward_lm_head(ctx, request);
}

void step_hidden_states(Context &ctx, const bonsai_hidden_states_desc &desc) {
  require_last_layer_done(ctx, "hidden_states");
  check_hidden_states_desc(desc, ctx.step.n_tokens);
  forward_final_norm(ctx, desc.first_token, desc.n_outputs, desc.hidden);
}

void step_end(Context &ctx) {
  BoundModel &m = bound_model(ctx, "end_step");
  require_open_step(ctx, "end_step");
  if (ctx.step.next_layer != m.dims.n_layer)
    fail_state(strformat("end_step: only %d of %d layers are encoded in this step",
                         ctx.step.next_layer, m.dims.n_layer));
  for (const StepSequence &sequence : ctx.step.sequences) {
    KvCache &kv = *sequence.kv;
    kv.length += sequence.n_tokens;
    if (!kv.recurrent.empty()) { // the copy this step wrote becomes the state
      kv.recurrent.current = 1 - kv.recurrent.current;
      kv.recurrent.position = kv.length;
    }
  }
  ctx.step.close();
}

} // namespace bonsai::cpu
