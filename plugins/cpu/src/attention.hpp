#pragma once
// Causal grouped-query attention of the open step against the KV cache.
#include <cstdint>

#include <oneapi/tbb/task_arena.h>

#include "context.hpp"
#include "kernels/kernel_set.hpp"
#include "model.hpp"
#include "options.hpp"

namespace bonsai::cpu {

struct AttentionJob {
  const ModelDims *dims = nullptr;
  int layer = 0;
  int n_tokens = 0;
  int64_t first_pos = 0;      // position of the step's first token
  const float *q = nullptr;   // [n_tokens][q_dim], normed and rotated
  KvCache *kv = nullptr;      // holds this step's keys/values already
  float *out = nullptr;       // [n_tokens][q_dim]
  float *scores = nullptr;    // [n_head][kMaxQueries][max_context]
  double *head_acc = nullptr; // [n_head][head_dim]
  const KernelSet *kernels = nullptr;
};

// The KV cache type for `choice`. Every set reads f32; f16 the exact set and
// the fast sets whose whole-head kernels serve this head_dim (a multiple of
// 16). Throws PluginError(UNSUPPORTED) for f16 where the fast path would fall
// back to its f32-only dot and axpy.
KvType kv_type_for(KvChoice choice, const KernelSet &kernels, int head_dim);

// Copies rows [first_token, first_token + n_tokens) of the step's new keys
// and values into `sequence`'s cache block `layer` from its first position on.
void store_keys_values(const StepBuffers &b, const StepSequence &sequence, int layer,
                       const KernelSet &kernels);

// Token i attends to positions 0..first_pos + i. Heads run in parallel.
void attention(const AttentionJob &job, oneapi::tbb::task_arena &arena);

} // namespace bonsai::cpu
