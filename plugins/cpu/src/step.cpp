#include "step.hpp"

#include "forward.hpp"
#include "plugin_error.hpp"

namespace bonsai::cpu {
namespace {

BoundModel &require_model(const Context &ctx, const char *call) {
  if (!ctx.model)
    fail_state(strformat("%s: no model is bound; call bind_model first", call));
  return *ctx.model;
}

void require_open_step(const Context &ctx, const char *call) {
  if (!ctx.step.open)
    fail_state(strformat("%s: no step is open; call begin_step first", call));
  if (ctx.step.failed)
    fail_state(strformat("%s: the open step failed earlier; call begin_step to start again", call));
}

void close_step(Context &ctx) {
  ctx.step = StepState{};
}

} // namespace

void step_begin(Context &ctx, const bonsai_step_desc &step) {
  BoundModel &m = require_model(ctx, "begin_step");
  const int32_t length = m.kv.length;
  if (step.n_tokens < 1 || step.n_tokens > ctx.max_batch)
    fail_invalid(strformat("begin_step: n_tokens is %d; it must be in 1..max_batch (%d)",
                           step.n_tokens, ctx.max_batch));
  if (int64_t{length} + step.n_tokens > ctx.max_context)
    fail_invalid(strformat("begin_step: %d tokens after %d cached positions exceed max_context %d",
                           step.n_tokens, length, ctx.max_context));
  if (step.token_ids == nullptr || step.positions == nullptr)
    fail_invalid("begin_step: token_ids and positions must not be NULL");
  for (int i = 0; i < step.n_tokens; ++i) {
    if (step.token_ids[i] < 0 || step.token_ids[i] >= m.dims.n_vocab)
      fail_invalid(strformat("begin_step: token_ids[%d] = %d is outside the vocabulary [0, %d)", i,
                             step.token_ids[i], m.dims.n_vocab));
    if (step.positions[i] != length + i)
      fail_invalid(strformat("begin_step: positions[%d] = %d, but ABI 1.0 requires kv_length + i "
                             "= %d",
                             i, step.positions[i], length + i));
  }
  if (ctx.step.open)
    ctx.log.debug("bonsai_cpu: begin_step discards a step that was never ended");
  close_step(ctx);
  embed_tokens(m, step.token_ids, step.positions, step.n_tokens);
  ctx.step.open = true;
  ctx.step.n_tokens = step.n_tokens;
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
    forward_layer(ctx, layer, ctx.step.n_tokens, m.kv.length);
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
  if (desc.first_token < 0 || desc.n_outputs < 1 ||
      int64_t{desc.first_token} + desc.n_outputs > ctx.step.n_tokens)
    fail_invalid(strformat("lm_head: tokens [%d, %d + %d) are not within the step's %d tokens",
                           desc.first_token, desc.first_token, desc.n_outputs, ctx.step.n_tokens));
  if (desc.logits == nullptr && desc.argmax == nullptr)
    fail_invalid("lm_head: both logits and argmax are NULL; nothing to compute");
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
  m.kv.length += ctx.step.n_tokens;
  close_step(ctx);
}

void kv_reset(Context &ctx) {
  BoundModel &m = require_model(ctx, "kv_reset");
  close_step(ctx);
  m.kv.length = 0;
}

void kv_truncate(Context &ctx, int32_t n_keep) {
  BoundModel &m = require_model(ctx, "kv_truncate");
  if (n_keep < 0 || n_keep > m.kv.length)
    fail_invalid(
        strformat("kv_truncate: n_keep %d is outside [0, kv_length = %d]", n_keep, m.kv.length));
  close_step(ctx);
  m.kv.length = n_keep;
}

int32_t kv_length(const Context &ctx) {
  return require_model(ctx, "kv_length").kv.length;
}

} // namespace bonsai::cpu
