#include "attention.hpp"

#include <algorithm>
#include <cmath>

#include <oneapi/tbb/parallel_for.h>

namespace bonsai::cpu {
namespace {

// The keys and values of a query head's KV head at positions 0..n_keys-1.
struct HeadKv {
  HeadSpan keys;
  HeadSpan values;
};
HeadKv head_kv(const AttentionJob &job, int head, int64_t n_keys) {
  const ModelDims &d = *job.dims;
  const int64_t offset = static_cast<int64_t>(head / (d.n_head / d.n_head_kv)) * d.head_dim;
  HeadKv kv;
  kv.keys.base = job.kv->k_at(job.layer, 0) + offset;
  kv.keys.stride = d.kv_dim();
  kv.keys.n = n_keys;
  kv.keys.dim = d.head_dim;
  kv.values = kv.keys;
  kv.values.base = job.kv->v_at(job.layer, 0) + offset;
  return kv;
}

// The head's score rows: kMaxQueries rows of max_context floats.
float *head_scores(const AttentionJob &job, int head) {
  return job.scores + static_cast<int64_t>(head) * kMaxQueries * job.kv->max_context;
}

// Exact path: scores, softmax and the weighted sum in double.
void attend_exact(const AttentionJob &job, int head, int token) {
  const ModelDims &d = *job.dims;
  const int hd = d.head_dim;
  const int64_t n_keys = job.first_pos + token + 1;
  const float *q = job.q + token * d.q_dim() + static_cast<int64_t>(head) * hd;
  float *scores = head_scores(job, head);
  const auto [keys, values] = head_kv(job, head, n_keys);
  double *acc = job.head_acc + static_cast<int64_t>(head) * hd;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));

  double max_score = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float *k = keys.base + j * keys.stride;
    double dot = 0.0;
    for (int i = 0; i < hd; ++i)
      dot += static_cast<double>(q[i]) * k[i];
    scores[j] = static_cast<float>(dot * scale);
    max_score = std::max(max_score, static_cast<double>(scores[j]));
  }
  std::fill(acc, acc + hd, 0.0);
  double denom = 0.0;
  for (int64_t j = 0; j < n_keys; ++j) {
    const double p = std::exp(static_cast<double>(scores[j]) - max_score);
    denom += p;
    const float *v = values.base + j * values.stride;
    for (int i = 0; i < hd; ++i)
      acc[i] += p * v[i];
  }
  float *out = job.out + token * d.q_dim() + static_cast<int64_t>(head) * hd;
  for (int i = 0; i < hd; ++i)
    out[i] = static_cast<float>(acc[i] / denom);
}

// Scores [0, n) -> unnormalised softmax weights exp(score - max); returns
// their sum.
float softmax_weights(float *scores, int64_t n) {
  float max_score = -INFINITY;
  for (int64_t j = 0; j < n; ++j)
    max_score = std::max(max_score, scores[j]);
  float denom = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    denom += scores[j];
  }
  return denom;
}

// Fast path: f32 with the kernel set's SIMD dot and axpy.
void attend_fast(const AttentionJob &job, int head, int token) {
  const ModelDims &d = *job.dims;
  const int hd = d.head_dim;
  const int64_t n_keys = job.first_pos + token + 1;
  const float *q = job.q + token * d.q_dim() + static_cast<int64_t>(head) * hd;
  float *scores = head_scores(job, head);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  float *out = job.out + token * d.q_dim() + static_cast<int64_t>(head) * hd;
  const KernelSet &kernels = *job.kernels;
  const bool whole_head = kernels.key_scores != nullptr && hd % 16 == 0;
  const auto [keys, values] = head_kv(job, head, n_keys);

  if (whole_head) {
    kernels.key_scores(q, keys, scale, scores);
  } else {
    for (int64_t j = 0; j < n_keys; ++j)
      scores[j] = kernels.dot(q, keys.base + j * keys.stride, hd) * scale;
  }
  const float denom = softmax_weights(scores, n_keys);
  if (whole_head) {
    kernels.weighted_values(scores, values, out);
  } else {
    std::fill(out, out + hd, 0.0f);
    for (int64_t j = 0; j < n_keys; ++j)
      kernels.axpy(scores[j], values.base + j * values.stride, out, hd);
  }
  const float inv = 1.0f / denom;
  for (int i = 0; i < hd; ++i)
    out[i] *= inv;
}

// Fast path for n_queries consecutive tokens of one head: their queries
// share every key and value load (prefill). Keys past a token's causal end
// are scored too but weighted zero.
void attend_fast_multi(const AttentionJob &job, int head, int token0, int n_queries) {
  const ModelDims &d = *job.dims;
  const int hd = d.head_dim;
  const int64_t max_context = job.kv->max_context;
  float *scores = head_scores(job, head);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Every key of the last query; earlier queries weigh the later keys zero.
  const auto [keys, values] = head_kv(job, head, job.first_pos + token0 + n_queries);
  MultiQuery queries;
  queries.q = job.q + token0 * d.q_dim() + static_cast<int64_t>(head) * hd;
  queries.q_stride = d.q_dim();
  queries.n = n_queries;

  const KernelSet &kernels = *job.kernels;
  kernels.key_scores_multi(queries, keys, scale, scores, max_context);
  float inv_denom[kMaxQueries];
  for (int i = 0; i < n_queries; ++i) {
    float *row = scores + i * max_context;
    const int64_t n_keys = job.first_pos + token0 + i + 1;
    inv_denom[i] = 1.0f / softmax_weights(row, n_keys);
    std::fill(row + n_keys, row + keys.n, 0.0f); // causal: later keys weigh nothing
  }
  float *out = job.out + token0 * d.q_dim() + static_cast<int64_t>(head) * hd;
  kernels.weighted_values_multi(scores, max_context, n_queries, values, out, d.q_dim());
  for (int i = 0; i < n_queries; ++i)
    for (int c = 0; c < hd; ++c)
      out[i * d.q_dim() + c] *= inv_denom[i];
}

} // namespace

void attention(const AttentionJob &job, oneapi::tbb::task_arena &arena) {
  const bool multi = !job.kernels->exact && job.kernels->key_scores_multi != nullptr &&
                     job.dims->head_dim % 64 == 0;
  const auto run_head = [&job, multi](int head) {
    if (multi) {
      for (int token = 0; token < job.n_tokens; token += kMaxQueries)
        attend_fast_multi(job, head, token, std::min(kMaxQueries, job.n_tokens - token));
      return;
    }
    for (int token = 0; token < job.n_tokens; ++token) {
      if (job.kernels->exact)
        attend_exact(job, head, token);
      else
        attend_fast(job, head, token);
    }
  };
  arena.execute([&] { oneapi::tbb::parallel_for(0, job.dims->n_head, run_head); });
}

} // namespace bonsai::cpu
