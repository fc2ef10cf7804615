#pragma once
// One token of a qwen35 gated attention layer after its projections
// (docs/models.md): each head's query RMS-normed and rotated, the key too,
// causal grouped attention over the cache, each head's output times
// sigmoid(gate). Shared by the host's own qwen35 layers and the MTP layer.
#include <cstdint>

#include "model/layer_math.hpp"

namespace bonsai::host {

struct GatedAttentionShape {
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  HeadsRotation q_rotation; // the query norm and RoPE
  HeadsRotation k_rotation; // the key norm and RoPE
};

struct GatedAttentionToken {
  const float *qg = nullptr; // 2 * n_head * head_dim: head h's query, then its gate
  float *k = nullptr;        // n_head_kv * head_dim, normed and rotated in place
  const float *v = nullptr;  // n_head_kv * head_dim
  int32_t position = 0;      // the RoPE position
  int32_t row = 0;           // the cache row k and v go to; rows [0, row] are attended
  float *k_cache = nullptr;  // [row][n_head_kv * head_dim]
  float *v_cache = nullptr;
  float *q = nullptr;      // scratch, n_head * head_dim
  float *scores = nullptr; // scratch, row + 1
  float *out = nullptr;    // n_head * head_dim
};

void gated_attention_token(const GatedAttentionShape &shape, const GatedAttentionToken &token);

} // namespace bonsai::host
