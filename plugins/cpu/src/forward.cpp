#include "forward.hpp"

#include <algorithm>
#include <cmath>

#include "attention.hpp"
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
  for (int i = 0; i < n_tokens; ++i)
    dequantize_row(m.token_embd->type, m.token_embd->row(token_ids[i]),
                   m.buffers.x.get() + i * n_embd, n_embd);
  rope_table(positions, n_tokens, m.dims.rope.inv_freq, m.dims.rope.magnitude, m.buffers.rope_cos,
             m.buffers.rope_sin);
}

namespace {

// Copies `count` values into a cache row, converting to the cache's type.
void store_row(const float *src, uint8_t *dst, int64_t count, KvType type,
               const KernelSet &kernels) {
  if (type == KvType::F16)
    kernels.to_f16(src, reinterpret_cast<uint16_t *>(dst), count);
  else
    std::copy_n(src, count, reinterpret_cast<float *>(dst));
}

// Copies rows [first_token, first_token + n_tokens) of the step's new keys
// and values into `sequence`'s cache from its first position on.
void store_keys_values(const StepBuffers &b, const StepSequence &sequence, int layer,
                       const KernelSet &kernels) {
  const KvCache &kv = *sequence.kv;
  const int64_t kv_dim = int64_t{kv.n_head_kv} * kv.head_dim;
  for (int t = 0; t < sequence.n_tokens; ++t) {
    const int64_t row = (sequence.first_token + t) * kv_dim;
    const int64_t pos = sequence.first_pos + t;
    for (int head = 0; head < kv.n_head_kv; ++head) {
      const int64_t col = row + int64_t{head} * kv.head_dim;
      store_row(b.k_new.get() + col, kv.k_at(layer, head, pos), kv.head_dim, kv.type, kernels);
      store_row(b.v_new.get() + col, kv.v_at(layer, head, pos), kv.head_dim, kv.type, kernels);
    }
  }
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

  // Attention block. The projections run once over every sequence's tokens.
  rmsnorm_rows(b.x.get(), b.h.get(), n_tokens, n_embd, l.attn_norm.data(), d.rms_eps);
  {
    ActInput in(b.h.get(), n_embd, n_tokens, n_embd, b.acts);
    runner.run(in, {{l.wq, b.q.get(), d.q_dim()},
                    {l.wk, b.k_new.get(), d.kv_dim()},
                    {l.wv, b.v_new.get(), d.kv_dim()}});
  }
  HeadNormRope rope;
  rope.n_tokens = n_tokens;
  rope.head_dim = d.head_dim;
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

  for (const StepSequence &sequence : ctx.step.sequences) {
    store_keys_values(b, sequence, layer, *ctx.kernels);
    const int64_t row = sequence.first_token;
    AttentionJob attn;
    attn.dims = &d;
    attn.layer = layer;
    attn.n_tokens = sequence.n_tokens;
    attn.first_pos = sequence.first_pos;
    attn.q = b.q.get() + row * d.q_dim();
    attn.kv = sequence.kv;
    attn.out = b.attn.get() + row * d.q_dim();
    attn.scores = b.scores.get();
    attn.head_acc = b.head_acc.get();
    attn.kernels = ctx.kernels;
    attention(attn, *ctx.arena);
  }
  {
    ActInput in(b.attn.get(), d.q_dim(), n_tokens, d.q_dim(), b.acts);
    runner.run(in, {{l.wo, b.h.get(), n_embd}});
  }
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

void forward_lm_head(Context &ctx, const LmHeadRequest &request) {
  BoundModel &m = *ctx.model;
  const ModelDims &d = m.dims;
  StepBuffers &b = m.buffers;
  MatmulRunner runner = ctx.runner();
  const int64_t n_embd = d.n_embd;
  const int64_t n_vocab = d.n_vocab;

  float *normed = b.h.get();
  rmsnorm_rows(b.x.get() + request.first_token * n_embd, normed, request.n_outputs, n_embd,
               m.output_norm.data(), d.rms_eps);
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
