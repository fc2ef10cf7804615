#include "step.hpp"

#include <cstring>

#include "bonsai/plugin/abi_checks.hpp"

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

// What one sequence of a step asks for, before it is checked.
struct SequenceRequest {
  int32_t slot = 0;
  int32_t n_tokens = 0;
  const int32_t *token_ids = nullptr;
  const int32_t *positions = nullptr;
};

// Checks one sequence of a step against its slot and appends it to the step
// being built. `call` names it in messages; `index` is its entry in a
// batch, or -1 for begin_step's single sequence.
void add_sequence(Context &ctx, const SequenceRequest &request, const char *call, int index) {
  // "begin_batch: sequences[2] (slot 5): " or "begin_step: ", formatted only on failure.
  const auto where = [&] {
    return index < 0 ? strformat("%s: ", call)
                     : strformat("%s: sequences[%d] (slot %d): ", call, index, request.slot);
  };
  BoundModel &m = *ctx.model;
  KvCache &kv = slot_cache(m, request.slot, call);
  StepState &step = ctx.step;
  const int32_t length = kv.length;
  if (request.n_tokens < 1 || request.n_tokens > ctx.max_batch - step.n_tokens)
    fail_invalid(strformat("%sn_tokens is %d; the step's tokens must total 1..max_batch (%d)",
                           where().c_str(), request.n_tokens, ctx.max_batch));
  if (int64_t{length} + request.n_tokens > ctx.max_context)
    fail_invalid(strformat("%s%d tokens after %d cached positions exceed max_context %d",
                           where().c_str(), request.n_tokens, length, ctx.max_context));
  if (request.token_ids == nullptr || request.positions == nullptr)
    fail_invalid(where() + "token_ids and positions must not be NULL");
  for (int i = 0; i < request.n_tokens; ++i) {
    if (request.token_ids[i] < 0 || request.token_ids[i] >= m.dims.n_vocab)
      fail_invalid(strformat("%stoken_ids[%d] = %d is outside the vocabulary [0, %d)",
                             where().c_str(), i, request.token_ids[i], m.dims.n_vocab));
    if (request.positions[i] != length + i)
      fail_invalid(strformat("%spositions[%d] = %d, but it must be the cached length + i = %d",
                             where().c_str(), i, request.positions[i], length + i));
  }
  for (const StepSequence &other : step.sequences)
    if (other.kv == &kv)
      fail_invalid(strformat("%sslot %d appears twice in one step", where().c_str(), request.slot));
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
  require_model(ctx, "begin_step");
  open_step(ctx, [&] {
    add_sequence(ctx, {0, desc.n_tokens, desc.token_ids, desc.positions}, "begin_step", -1);
  });
}

void step_begin_batch(Context &ctx, const bonsai_batch_step_desc &batch) {
  require_model(ctx, "begin_batch");
  if (batch.n_sequences < 1)
    fail_invalid(strformat("begin_batch: n_sequences is %d; it must be >= 1", batch.n_sequences));
  if (batch.sequences == nullptr)
    fail_invalid("begin_batch: sequences is NULL");
  const uint32_t stride = batch.sequences[0].struct_size;
  if (stride < sizeof(bonsai_sequence_step))
    fail_invalid(
        strformat("begin_batch: sequences[0].struct_size is %u, smaller than the %zu bytes "
                  "of ABI %d.%d",
                  stride, sizeof(bonsai_sequence_step), BONSAI_ABI_MAJOR, BONSAI_ABI_MINOR));
  open_step(ctx, [&] {
    const auto *bytes = reinterpret_cast<const unsigned char *>(batch.sequences);
    for (int i = 0; i < batch.n_sequences; ++i) {
      bonsai_sequence_step entry;
      std::memcpy(&entry, bytes + static_cast<size_t>(i) * stride, sizeof entry);
      if (entry.struct_size != stride)
        fail_invalid(strformat("begin_batch: sequences[%d].struct_size is %u, but "
                               "sequences[0]'s is %u; they must all be the same",
                               i, entry.struct_size, stride));
      add_sequence(ctx, {entry.slot, entry.n_tokens, entry.token_ids, entry.positions},
                   "begin_batch", i);
    }
  });
}

void step_encode_layer(Context &ctx, int32_t layer) {
  BoundModel &m = require_model(ctx, "encode_layer");
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

void step_lm_head(Context &ctx, const bonsai_lm_head_desc &desc) {
  BoundModel &m = require_model(ctx, "lm_head");
  require_open_step(ctx, "lm_head");
  if (ctx.step.next_layer != m.dims.n_layer)
    fail_state(strformat("lm_head: only %d of %d layers are encoded in this step",
                         ctx.step.next_layer, m.dims.n_layer));
  check_lm_head_desc(desc, ctx.step.n_tokens);
  LmHeadRequest request;
  request.first_token = desc.first_token;
  request.n_outputs = desc.n_outputs;
  request.logits = desc.logits;
  request.argmax = desc.argmax;
  forward_lm_head(ctx, request);
}

void step_end(Context &ctx) {
  BoundModel &m = require_model(ctx, "end_step");
  require_open_step(ctx, "end_step");
  if (ctx.step.next_layer != m.dims.n_layer)
    fail_state(strformat("end_step: only %d of %d layers are encoded in this step",
                         ctx.step.next_layer, m.dims.n_layer));
  for (const StepSequence &sequence : ctx.step.sequences)
    sequence.kv->length += sequence.n_tokens;
  ctx.step.close();
}

} // namespace bonsai::cpu
