#pragma once
// The Qwen3 model as stored in a GGUF file: hyper-parameters plus typed views
// of every weight tensor (pointers into the File's mapping, no copies).
// from_gguf validates names, shapes and types, so backends can trust them.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/rope.hpp"

namespace bonsai {

struct Qwen3Hparams {
  int64_t n_embd = 0;      // qwen3.embedding_length
  int64_t n_layer = 0;     // qwen3.block_count
  int64_t n_head = 0;      // qwen3.attention.head_count
  int64_t n_head_kv = 0;   // qwen3.attention.head_count_kv
  int64_t head_dim = 0;    // qwen3.attention.key_length (default n_embd / n_head)
  int64_t n_ff = 0;        // qwen3.feed_forward_length
  int64_t n_vocab = 0;     // rows of token_embd.weight
  int64_t n_ctx_train = 0; // qwen3.context_length
  RopeSettings rope;       // qwen3.rope.* (base and scaling)
  float rms_eps = 1e-6f;   // qwen3.attention.layer_norm_rms_epsilon
};

// A weight tensor inside the mapped file. dims follow GGUF: ne0 (the
// contiguous, input-feature axis) first.
struct TensorView {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> dims;
  const uint8_t *data = nullptr;
  size_t nbytes = 0;

  int64_t cols() const { return dims.empty() ? 0 : dims[0]; } // in_features
  int64_t rows() const;                                       // product of dims[1..]
  int64_t n_elements() const { return cols() * rows(); }
};

struct LayerWeights {
  TensorView attn_norm;   // [n_embd]
  TensorView attn_q;      // [n_embd, n_head * head_dim]
  TensorView attn_k;      // [n_embd, n_head_kv * head_dim]
  TensorView attn_v;      // [n_embd, n_head_kv * head_dim]
  TensorView attn_q_norm; // [head_dim]
  TensorView attn_k_norm; // [head_dim]
  TensorView attn_output; // [n_head * head_dim, n_embd]
  TensorView ffn_norm;    // [n_embd]
  TensorView ffn_gate;    // [n_embd, n_ff]
  TensorView ffn_up;      // [n_embd, n_ff]
  TensorView ffn_down;    // [n_ff, n_embd]
};

struct ModelSpec {
  Qwen3Hparams hparams;
  TensorView token_embd;            // [n_embd, n_vocab]
  TensorView output_norm;           // [n_embd]
  std::optional<TensorView> output; // [n_embd, n_vocab]; absent when tied
  std::vector<LayerWeights> layers;

  bool tied() const { return !output.has_value(); }
  // The LM head: output.weight, or token_embd.weight when tied.
  const TensorView &lm_head() const { return output ? *output : token_embd; }

  // Every weight tensor in file order of use (embedding, layers, final norm, head).
  std::vector<const TensorView *> all_tensors() const;
  int64_t n_params() const;    // elements of all weights (the tied head counted once)
  size_t weight_bytes() const; // bytes of all weights as stored

  // Reads and validates a qwen3 model. The File must outlive the spec (views
  // point into its mapping). Throws bonsai::Error "<path>: <problem>".
  static ModelSpec from_gguf(const gguf::File &file);
};

} // namespace bonsai
