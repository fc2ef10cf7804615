#include "forward.hpp"

#include "tile_format.hpp"

#include <algorithm>
#include <cmath>

#include "attention.hpp"
#include "delta_net_layer.hpp"
#include "norms.hpp"

namespace bonsai::cpu {
namespace {

void add_rows(float *x, const float *delta, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] += delta[i];
}

// Lowest index of the largest value; NaN never wins over a number.
int32_t argmax_row(const float *row, int n) {
  int32_t best = 0;
  for (int i = 1; i < n; ++i)
    if (row[i] > row[best] || (std::isnan(row[best]) && !std::isnan(row[i])))
      best = i;
  return best;
}

} // namespace

void embed_tokens(BoundModel &m, const int32_t *token_ids, const int32_t *positions, int n_tokens) {
  const int64_t n_embd = m.dims.n_embd;
  uint8_t tiled_row[kTileMaxRowBytes]; // a row of a tiled token_embd, gathered

  for (int i = 0; i < n_tokens; ++i)
    dequantize_row(m.token_embd->type, m.token_embd->natural_row(token_ids[i], tiled_row),
                   m.buffers.x.get() + i * n_embd, n_embd);
  rope_table(positions, n_tokens, m.dims.rope.inv_freq, m.dims.rope.magnitude, m.buffers.rope_cos,
             m.buffers.rope_sin);
}

namespace {

// Per-head norm and RoPE of the open step's queries and keys.
void norm_rope_queries_keys(const Context &ctx, const LayerBinding &l) {
  const ModelDims &d = ctx.model->dims;
  const StepBuffers &b = ctx.model->buffers;
  HeadNormRope rope;
  rope.n_tokens = ctx.step.n_tokens;
  rope.head_dim = d.head_dim;
  rope.n_rot = d.n_rot;
  rope.eps = d.rms_eps;
  rope.cos = b.rope_cos.data();
  rope.sin = b.rope_sin.data();
  rope.v = b.q.get();
  rope.ld = d.q_dim();
  rope.n_heads = d.n_head;
  rope.weight = l.q_norm.data();
  norm_rope_heads(rope);
  rope.v = b.k_new.get();
  rope.ld = d.kv_dim();
  rope.n_heads = d.n_head_kv;
  rope.weight = l.k_norm.data();
  norm_rope_heads(rope);
}

// Each sequence's keys and values go to its slot and its tokens attend to
// that slot alone: b.attn gets every head's output.
void attend_sequences(Context &ctx, const LayerBinding &l) {
  BoundModel &m = *ctx.model;
  StepBuffers &b = m.buffers;
  for (const StepSequence &sequence : ctx.step.sequences) {
    store_keys_values(b, sequence, l.cache_index, *ctx.kernels);
    const int64_t row = sequence.first_token;
    AttentionJob attn;
    attn.dims = &m.dims;
    attn.layer = l.cache_index;
    attn.n_tokens = sequence.n_tokens;
    attn.first_pos = sequence.first_pos;
    attn.q = b.q.get() + row * m.dims.q_dim();
    attn.kv = sequence.kv;
    attn.out = b.attn.get() + row * m.dims.q_dim();
    attn.scores = b.scores.get();
    attn.head_acc = b.head_acc.get();
    attn.kernels = ctx.kernels;
    attention(attn, *ctx.arena);
  }
}

float sigmoid(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}

// Attention of the normed rows in b.h; the projected output goes to b.h.
// qwen3's (MixerKind::Attention), or qwen35's gated attention, whose query
// projection interleaves each head's query and output gate, whose RoPE turns
// the first n_rot values of a head, and whose head outputs are scaled by
// sigmoid(gate) before the output projection.
void attention_mixer(Context &ctx, const LayerBinding &l) {
  const ModelDims &d = ctx.model->dims;
  StepBuffers &b = ctx.model->buffers;
  MatmulRunner runner = ctx.runner();
  const int n_tokens = ctx.step.n_tokens;
  const int64_t q_dim = d.q_dim(), hd = d.head_dim;
  const bool gated = l.kind == MixerKind::GatedAttention;
  {
    ActInput in(b.h.get(), d.n_embd, n_tokens, d.n_embd, b.acts);
    runner.run(in, {{l.wq, gated ? b.query_gate.get() : b.q.get(), gated ? 2 * q_dim : q_dim},
                    {l.wk, b.k_new.get(), d.kv_dim()},
                    {l.wv, b.v_new.get(), d.kv_dim()}});
  }
  if (gated)
    for (int t = 0; t < n_tokens; ++t)
      for (int head = 0; head < d.n_head; ++head)
        std::copy_n(b.query_gate.get() + t * 2 * q_dim + 2 * head * hd, hd,
                    b.q.get() + t * q_dim + head * hd);
  norm_rope_queries_keys(ctx, l);
  attend_sequences(ctx, l);
  if (gated)
    for (int t = 0; t < n_tokens; ++t)
      for (int head = 0; head < d.n_head; ++head) {
        const float *gate = b.query_gate.get() + t * 2 * q_dim + (2 * head + 1) * hd;
        float *out = b.attn.get() + t * q_dim + head * hd;
        for (int64_t i = 0; i < hd; ++i)
          out[i] *= sigmoid(gate[i]);
      }
  ActInput in(b.attn.get(), q_dim, n_tokens, q_dim, b.acts);
  runner.run(in, {{l.wo, b.h.get(), d.n_embd}});
}

} // namespace

void forward_layer(Context &ctx, int layer) {
  BoundModel &m = *ctx.model;
  const ModelDims &d = m.dims;
  const LayerBinding &l = m.layers[static_cast<size_t>(layer)];
  StepBuffers &b = m.buffers;
  MatmulRunner runner = ctx.runner();
  const int n_tokens = ctx.step.n_tokens;
  const int64_t n_embd = d.n_embd;

  // The mixer: its input normed into b.h, its projected output back in b.h.
  rmsnorm_rows(b.x.get(), b.h.get(), n_tokens, n_embd, l.attn_norm.data(), d.rms_eps);
  if (l.kind == MixerKind::GatedDeltaNet)
    delta_net_mixer(ctx, l);
  else
    attention_mixer(ctx, l);
  add_rows(b.x.get(), b.h.get(), n_tokens * n_embd);

  // MLP block: gate and up fused with SwiGLU, then down.
  rmsnorm_rows(b.x.get(), b.h.get(), n_tokens, n_embd, l.ffn_norm.data(), d.rms_eps);
  {
    ActInput in(b.h.get(), n_embd, n_tokens, n_embd, b.acts);
    runner.run(in, {{l.w_gate, b.ffn.get(), d.n_ff, l.w_up}});
  }
  {
    ActInput in(b.ffn.get(), d.n_ff, n_tokens, d.n_ff, b.acts);
    runner.run(in, {{l.w_down, b.h.get(), n_embd}});
  }
  add_rows(b.x.get(), b.h.get(), n_tokens * n_embd);
}

void forward_final_norm(const Context &ctx, int first, int n, float *out) {
  const BoundModel &m = *ctx.model;
  const ModelDims &d = m.dims;
  rmsnorm_rows(m.buffers.x.get() + static_cast<int64_t>(first) * d.n_embd, out, n, d.n_embd,
               m.output_norm.data(), d.rms_eps);
}

void forward_lm_head(Context &ctx, const LmHeadRequest &request) {
  BoundModel &m = *ctx.model;
  const ModelDims &d = m.dims;
  StepBuffers &b = m.buffers;
  MatmulRunner runner = ctx.runner();
  const int64_t n_embd = d.n_embd;
  const int64_t n_vocab = d.n_vocab;

  float *normed = b.h.get();
  forward_final_norm(ctx, request.first_token, request.n_outputs, normed);
  if (request.logits != nullptr) {
    ActInput in(normed, n_embd, request.n_outputs, n_embd, b.acts);
    runner.run(in, {{m.lm_head, request.logits, n_vocab}});
    if (request.argmax != nullptr)
      for (int i = 0; i < request.n_outputs; ++i)
        request.argmax[i] = argmax_row(request.logits + i * n_vocab, d.n_vocab);
    return;
  }
  // Argmax only: logits of a few tokens at a time in a scratch buffer. Each
  // token's logits do not depend on the grouping, so the ids equal the
  // argmax of the logits the other branch would return.
  for (int first = 0; first < request.n_outputs; first += b.lm_chunk) {
    const int count = std::min(b.lm_chunk, request.n_outputs - first);
    ActInput in(normed + first * n_embd, n_embd, count, n_embd, b.acts);
    runner.run(in, {{m.lm_head, b.lm_logits.get(), n_vocab}});
    for (int i = 0; i < count; ++i)
      request.argmax[first + i] = argmax_row(b.lm_logits.get() + i * n_vocab, d.n_vocab);
  }
}

} // namespace bonsai::cpu
