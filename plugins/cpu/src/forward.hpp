#pragma once
// The math of one step: embedding lookup, one decoder layer (ARCHITECTURE.md
// §1) and the LM head. Callers (step.cpp) have validated the arguments.
#include <cstdint>

#include "context.hpp"

namespace bonsai::cpu {

// x[i] = token_embd row of token_ids[i]; RoPE table for the positions.
void embed_tokens(BoundModel &m, const int32_t *token_ids, const int32_t *positions, int n_tokens);

// Runs layer `layer` on the step's n_tokens rows, which start at KV position
// first_pos; writes the keys/values into the cache.
void forward_layer(Context &ctx, int layer, int n_tokens, int64_t first_pos);

struct LmHeadRequest {
  int first_token = 0;
  int n_outputs = 0;
  float *logits = nullptr;   // [n_outputs][n_vocab] or NULL
  int32_t *argmax = nullptr; // [n_outputs] or NULL
};
void forward_lm_head(Context &ctx, const LmHeadRequest &request);

} // namespace bonsai::cpu
