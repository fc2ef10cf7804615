#pragma once
// Internal: reads and validates Qwen3 hyper-parameters from GGUF metadata.
#include <string>

#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"

namespace bonsai {

// n_vocab comes from the rows of token_embd.weight (a missing or non-2-D
// tensor is an error here). Everything is range-checked so that sizes derived
// from it (KV cache, activations) cannot overflow.
Qwen3Hparams read_qwen3_hparams(const gguf::File &file);

// RoPE settings and every other key that changes the forward pass
// (hparams_rope.cpp): honoured, or refused with an Error naming the key.
void read_forward_pass_keys(const gguf::File &file, const std::string &arch, Qwen3Hparams &h);

} // namespace bonsai
