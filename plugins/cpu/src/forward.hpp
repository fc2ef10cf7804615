#pragma once
// The math of one step: embedding lookup, one decoder layer
// (docs/architecture.md, "The model") and the LM head. Callers (step.cpp) have validated the
// arguments.
#include <cstdint>

#include "context.hpp"

namespace bonsai::cpu {

// x[i] = token_embd row of token_ids[i]; RoPE table for the positions.
void embed_tokens(BoundModel &m, const int32_t *token_ids, const int32_t *positions, int n_tokens);

// Runs layer `layer` on the open step's rows: one GEMM per weight across
// every sequence's tokens, then each sequence's keys/values go to its slot
// and its tokens attend to that slot alone.
void forward_layer(Context &ctx, int layer);

struct LmHeadRequest {
  int first_token = 0;
  int n_outputs = 0;
  float *logits = nullptr;   // [n_outputs][n_vocab] or NULL
  int32_t *argmax = nullptr; // [n_outputs] or NULL
};
void forward_lm_head(Context &ctx, const LmHeadRequest &request);
// The final RMSNorm of tokens [first, first + n) of the step into out
// (n x n_embd): what the LM head multiplies.
void forward_final_norm(const Context &ctx, int first, int n, float *out);

} // namespace bonsai::cpu
