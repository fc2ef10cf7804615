#include "attention.hpp"

#include <algorithm>
#include <cmath>

#include <oneapi/tbb/parallel_for.h>

#include "bonsai/core/formats.hpp"
#include "plugin_error.hpp"

namespace bonsai::cpu {
namespace {

// The keys and values of KV head `kv_head` at positions 0..n_keys-1.
struct HeadKv {
  HeadSpan keys;
  HeadSpan values;
};
HeadKv head_kv(const AttentionJob &job, int kv_head, int64_t n_keys) {
  const ModelDims &d = *job.dims;
  HeadKv kv;
  kv.keys.base = job.kv->k_at(job.layer, kv_head, 0);
  kv.keys.type = job.kv->type;
  kv.keys.stride = d.head_dim;
  kv.keys.n = n_keys;
  kv.keys.dim = d.head_dim;
  kv.values = kv.keys;
  kv.values.base = job.kv->v_at(job.layer, kv_head, 0);
  return kv;
}

int kv_head_of(const ModelDims &d, int head) {
  return head / (d.n_head / d.n_head_kv);
}

// Work item `item`'s score rows: kMaxQueries rows of max_context floats.
float *item_scores(const AttentionJob &job, int item) {
  return job.scores + static_cast<int64_t>(item) * kMaxQueries * job.kv->max_context;
}

// Element i of position j of a span, as double (exact path).
double element(const HeadSpan &span, int64_t j, int i) {
  if (span.type == KvType::F16)
    return fp16_to_f32(span.f16()[j * span.stride + i]);
  return span.f32()[j * span.stride + i];
}

// Exact path: scores, softmax and the weighted sum in double.
void attend_exact(const AttentionJob &job, int head, int token) {
  const ModelDims &d = *job.dims;
  const int hd = d.head_dim;
  const int64_t n_keys = job.first_pos + token + 1;
  const float *q = job.q + token * d.q_dim() + static_cast<int64_t>(head) * hd;
  float *scores = item_scores(job, head);
  const auto [keys, values] = head_kv(job, kv_head_of(d, head), n_keys);
  double *acc = job.head_acc + static_cast<int64_t>(head) * hd;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));

  double max_score = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    double dot = 0.0;
    for (int i = 0; i < hd; ++i)
      dot += static_cast<double>(q[i]) * element(keys, j, i);
    scores[j] = static_cast<float>(dot * scale);
    max_score = std::max(max_score, static_cast<double>(scores[j]));
  }
  std::fill(acc, acc + hd, 0.0);
  double denom = 0.0;
  for (int64_t j = 0; j < n_keys; ++j) {
    const double p = std::exp(static_cast<double>(scores[j]) - max_score);
    denom += p;
    for (int i = 0; i < hd; ++i)
      acc[i] += p * element(values, j, i);
  }
  float *out = job.out + token * d.q_dim() + static_cast<int64_t>(head) * hd;
  for (int i = 0; i < hd; ++i)
    out[i] = static_cast<float>(acc[i] / denom);
}

// Fast path, one query at a time: the set's whole-head helpers (f32 or f16
// cache), or its dot and axpy (f32 cache) when head_dim % 16 != 0.
void attend_fast(const AttentionJob &job, int head, int token) {
  const ModelDims &d = *job.dims;
  const int hd = d.head_dim;
  const int64_t n_keys = job.first_pos + token + 1;
  const float *q = job.q + token * d.q_dim() + static_cast<int64_t>(head) * hd;
  float *scores = item_scores(job, head);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  float *out = job.out + token * d.q_dim() + static_cast<int64_t>(head) * hd;
  const KernelSet &kernels = *job.kernels;
  const bool whole_head = kernels.key_scores != nullptr && hd % 16 == 0;
  const auto [keys, values] = head_kv(job, kv_head_of(d, head), n_keys);

  if (whole_head) {
    kernels.key_scores(q, keys, scale, scores);
  } else {
    for (int64_t j = 0; j < n_keys; ++j)
      scores[j] = kernels.dot(q, keys.f32() + j * keys.stride, hd) * scale;
  }
  const float denom = kernels.softmax_weights(scores, n_keys);
  if (whole_head) {
    kernels.weighted_values(scores, values, out);
  } else {
    std::fill(out, out + hd, 0.0f);
    for (int64_t j = 0; j < n_keys; ++j)
      kernels.axpy(scores[j], values.f32() + j * values.stride, out, hd);
  }
  const float inv = 1.0f / denom;
  for (int i = 0; i < hd; ++i)
    out[i] *= inv;
}

// How the grouped path splits one KV head's queries (its query heads times
// the step's tokens) into groups of at most kMaxQueries that share every key
// and value load: `heads` query heads of `tokens` consecutive tokens.
struct GroupShape {
  int heads = 1;       // query heads per group
  int tokens = 1;      // tokens per group
  int head_chunks = 1; // groups needed to cover the KV head's query heads
};
GroupShape group_shape(const ModelDims &d) {
  const int per_kv = d.n_head / d.n_head_kv;
  GroupShape s;
  s.heads = std::min(per_kv, kMaxQueries);
  s.tokens = kMaxQueries / s.heads;
  s.head_chunks = (per_kv + s.heads - 1) / s.heads;
  return s;
}

// Fast path for the queries of `n_heads` query heads from `head0` (all of one
// KV head) and `n_tok` tokens from `token0`: they share each key and value
// load. Keys past a token's causal end are scored too but weighted zero.
void attend_group(const AttentionJob &job, float *scores, int head0, int n_heads, int token0,
                  int n_tok) {
  const ModelDims &d = *job.dims;
  const int hd = d.head_dim;
  const int64_t max_context = job.kv->max_context;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Every key of the last token; earlier tokens weigh the later keys zero.
  const auto [keys, values] = head_kv(job, kv_head_of(d, head0), job.first_pos + token0 + n_tok);
  QueryGroup group;
  int64_t n_keys[kMaxQueries];
  for (int t = 0; t < n_tok; ++t)
    for (int h = 0; h < n_heads; ++h) {
      const int64_t offset = (token0 + t) * d.q_dim() + static_cast<int64_t>(head0 + h) * hd;
      group.q[group.n] = job.q + offset;
      group.out[group.n] = job.out + offset;
      n_keys[group.n] = job.first_pos + token0 + t + 1;
      ++group.n;
    }

  const KernelSet &kernels = *job.kernels;
  kernels.key_scores_multi(group, keys, scale, scores, max_context);
  float inv_denom[kMaxQueries];
  for (int i = 0; i < group.n; ++i) {
    float *row = scores + i * max_context;
    inv_denom[i] = 1.0f / kernels.softmax_weights(row, n_keys[i]);
    std::fill(row + n_keys[i], row + keys.n, 0.0f); // causal: later keys weigh nothing
  }
  kernels.weighted_values_multi(scores, max_context, group, values);
  for (int i = 0; i < group.n; ++i)
    for (int c = 0; c < hd; ++c)
      group.out[i][c] *= inv_denom[i];
}

// All of one work item's queries: one chunk of a KV head's query heads, over
// every token of the step.
void attend_item(const AttentionJob &job, const GroupShape &shape, int item) {
  const ModelDims &d = *job.dims;
  const int per_kv = d.n_head / d.n_head_kv;
  const int kv_head = item / shape.head_chunks;
  const int head0 = kv_head * per_kv + (item % shape.head_chunks) * shape.heads;
  const int n_heads = std::min(shape.heads, (kv_head + 1) * per_kv - head0);
  float *scores = item_scores(job, item);
  for (int token = 0; token < job.n_tokens; token += shape.tokens)
    attend_group(job, scores, head0, n_heads, token, std::min(shape.tokens, job.n_tokens - token));
}

// Copies `count` values into a cache row, converting to the cache's type.
void store_row(const float *src, uint8_t *dst, int64_t count, KvType type,
               const KernelSet &kernels) {
  if (type == KvType::F16)
    kernels.to_f16(src, reinterpret_cast<uint16_t *>(dst), count);
  else
    std::copy_n(src, count, reinterpret_cast<float *>(dst));
}

} // namespace

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

KvType kv_type_for(KvChoice choice, const KernelSet &kernels, int head_dim) {
  if (choice == KvChoice::F32)
    return KvType::F32;
  if (!kernels.exact && (kernels.key_scores == nullptr || head_dim % 16 != 0))
    fail(BONSAI_ERR_UNSUPPORTED,
         strformat("kv=f16: the '%s' kernels read an f16 KV cache only when head_dim is a "
                   "multiple of 16 (it is %d); use kv=f32",
                   kernels.name, head_dim));
  return KvType::F16;
}

void attention(const AttentionJob &job, oneapi::tbb::task_arena &arena) {
  const ModelDims &d = *job.dims;
  const KernelSet &kernels = *job.kernels;
  if (!kernels.exact && kernels.key_scores_multi != nullptr && d.head_dim % 64 == 0) {
    const GroupShape shape = group_shape(d);
    const int n_items = d.n_head_kv * shape.head_chunks; // <= n_head: score rows suffice
    arena.execute([&] {
      oneapi::tbb::parallel_for(0, n_items, [&](int item) { attend_item(job, shape, item); });
    });
    return;
  }
  const auto run_head = [&job, &kernels](int head) {
    for (int token = 0; token < job.n_tokens; ++token) {
      if (kernels.exact)
        attend_exact(job, head, token);
      else
        attend_fast(job, head, token);
    }
  };
  arena.execute([&] { oneapi::tbb::parallel_for(0, d.n_head, run_head); });
}

} // namespace bonsai::cpu
