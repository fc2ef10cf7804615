#pragma once
// A Qwen3-family model as stored in a GGUF file: hyper-parameters plus typed
// views of every weight tensor (pointers into the File's mapping, no copies).
// from_gguf validates names, shapes and types, so backends can trust them.
// Two architectures: `qwen3` (every layer attention + MLP) and `qwen35`
// (Bonsai-27B: gated DeltaNet layers with a gated attention layer every
// few; docs/models.md).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/rope.hpp"

namespace bonsai {

enum class Architecture { qwen3, qwen35 }; // general.architecture "qwen3" / "qwen35"

// The gated DeltaNet (GDN) layers of a qwen35 model (qwen35.ssm.* keys).
struct DeltaNetHparams {
  int64_t conv_kernel = 0; // ssm.conv_kernel: width K of the causal depthwise conv
  int64_t head_dim = 0;    // ssm.state_size: d, the size of every q/k/v head (state d x d)
  int64_t n_v_heads = 0;   // ssm.time_step_rank: value heads, one state each
  int64_t n_k_heads = 0;   // ssm.group_count: q/k heads; value head h reads h mod n_k_heads

  int64_t key_dim() const { return n_k_heads * head_dim; }
  int64_t value_dim() const { return n_v_heads * head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); } // q | k | v channels
};

// What qwen35 adds to the Qwen3 hyper-parameters.
struct HybridHparams {
  DeltaNetHparams delta_net;
  int64_t n_rot = 0; // rope.dimension_count: leading dims of an attention head that rotate
  // nextn_predict_layers: multi-token-prediction (MTP) layers after the
  // trunk; the forward pass never runs them, a draft may (read_mtp_weights)
  int64_t n_nextn = 0;
  std::array<int64_t, 4> rope_sections{}; // rope.dimension_sections (M-RoPE)
  std::vector<bool> recurrent;            // per trunk layer: gated DeltaNet, else attention
};

struct Qwen3Hparams {
  int64_t n_embd = 0;                      // qwen3.embedding_length
  int64_t n_layer = 0;                     // qwen3.block_count
  int64_t n_head = 0;                      // qwen3.attention.head_count
  int64_t n_head_kv = 0;                   // qwen3.attention.head_count_kv
  int64_t head_dim = 0;                    // qwen3.attention.key_length (default n_embd / n_head)
  int64_t n_ff = 0;                        // qwen3.feed_forward_length
  int64_t n_vocab = 0;                     // rows of token_embd.weight
  int64_t n_ctx_train = 0;                 // qwen3.context_length
  RopeSettings rope;                       // qwen3.rope.* (base and scaling)
  float rms_eps = 1e-6f;                   // qwen3.attention.layer_norm_rms_epsilon
  Architecture arch = Architecture::qwen3; // general.architecture
  // qwen35 only. Then n_layer counts the trunk (block_count minus the MTP
  // layers), head_dim is the attention layers' and n_head/n_head_kv theirs.
  std::optional<HybridHparams> hybrid;
};

// The RoPE rates of an attention head: head_dim / 2 entries for qwen3; for
// qwen35, n_rot / 2 (only the first n_rot dims rotate, pairs (i, i + n_rot/2)),
// with 0 for a pair that M-RoPE assigns to the "extra" position, which is 0
// for text. Scaled as the settings ask.
std::vector<double> attention_rope_rates(const Qwen3Hparams &h);

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

// The tensors of a gated DeltaNet layer (qwen35; docs/models.md has the math).
struct DeltaNetWeights {
  TensorView qkv;     // attn_qkv [n_embd, conv_dim]: conv input, q | k | v channels
  TensorView gate;    // attn_gate [n_embd, value_dim]: z, the output gate
  TensorView conv;    // ssm_conv1d [K, conv_dim], float; w[c][K-1] multiplies the newest input
  TensorView dt_bias; // ssm_dt.bias [n_v_heads], float
  TensorView a;       // ssm_a [n_v_heads], float: -exp(A_log)
  TensorView beta;    // ssm_beta [n_embd, n_v_heads]
  TensorView alpha;   // ssm_alpha [n_embd, n_v_heads]
  TensorView norm;    // ssm_norm [d], float, shared by every head
  TensorView out;     // ssm_out [value_dim, n_embd]
};

struct LayerWeights {
  // qwen35: a gated DeltaNet layer has `delta_net` and empty attention
  // views (data == nullptr); an attention layer's attn_q has 2 * n_head *
  // head_dim rows, query and output gate interleaved per head. ffn_norm is
  // the file's post_attention_norm there.
  std::optional<DeltaNetWeights> delta_net;
  bool recurrent() const { return delta_net.has_value(); }

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

// qwen35's multi-token-prediction (MTP) layer, blk.<n_layer>: from the next
// token's embedding e and the trunk's output-normed last hidden state h it
// predicts the token after next (docs/models.md, "The MTP layer"):
//   c = eh_proj [RMSNorm(e; enorm) ; RMSNorm(h; hnorm)], then a gated
//   attention layer with its own KV cache and the MLP (`layer`), then
//   logits = head RMSNorm(c; head norm).
// Only speculative drafting runs it.
struct MtpWeights {
  LayerWeights layer;                     // gated attention + MLP (ffn_norm: post_attention_norm)
  TensorView eh_proj;                     // [2 * n_embd, n_embd]: e's half first
  TensorView enorm;                       // [n_embd]
  TensorView hnorm;                       // [n_embd]
  std::optional<TensorView> embed_tokens; // [n_embd, n_vocab]; absent: token_embd
  std::optional<TensorView> shared_head_head; // [n_embd, n_vocab]; absent: the LM head
  std::optional<TensorView> shared_head_norm; // [n_embd]; absent: output_norm
  int64_t index = 0;                          // its block number (the trunk's depth)

  // Every tensor, in order of use (the absent ones left out).
  std::vector<const TensorView *> all_tensors() const;
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

  Architecture arch() const { return hparams.arch; }

  // Every weight tensor in file order of use (embedding, layers, final norm,
  // head); a layer's absent views are left out.
  std::vector<const TensorView *> all_tensors() const;
  int64_t n_params() const;    // elements of all weights (the tied head counted once)
  size_t weight_bytes() const; // bytes of all weights as stored

  // Reads and validates a qwen3 or qwen35 model. The File must outlive the spec (views
  // point into its mapping). Throws bonsai::Error "<path>: <problem>".
  static ModelSpec from_gguf(const gguf::File &file);
};

// The first MTP layer of a qwen35 file whose hyper-parameters are `h` (from
// ModelSpec::from_gguf). Throws bonsai::Error "<path>: <problem>" when the
// model is not qwen35, has no MTP layer (nextn_predict_layers 0), or a tensor
// of it is missing or mis-shaped. Views only: nothing is read or copied.
MtpWeights read_mtp_weights(const gguf::File &file, const Qwen3Hparams &h);

} // namespace bonsai
