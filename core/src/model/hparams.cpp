// Qwen3-family hyper-parameters from the <arch>.* metadata keys (qwen3,
// qwen35).
#include <cmath>
#include <string>

#include "bonsai/core/error.hpp"
#include "hparams.hpp"

namespace bonsai {

namespace {

// Upper bounds well above any real Qwen3 (8B: 4096 / 36 / 32 / 128 / 12288 /
// 151936) that keep products such as n_ctx * n_layer * n_kv * head_dim far
// from overflowing 64 bits.
constexpr int64_t kMaxEmbd = int64_t{1} << 16;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxHeadDim = 1024;
constexpr int64_t kMaxFf = int64_t{1} << 20;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxCtx = int64_t{1} << 24;

class HparamReader {
public:
  HparamReader(const gguf::File &file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  [[noreturn]] void fail(const std::string &what) const { throw Error(file_.path() + ": " + what); }

  std::string key(const std::string &name) const { return arch_ + "." + name; }

  bool has(const std::string &name) const { return file_.find(key(name)) != nullptr; }

  // A required positive integer in [1, max]. A per-layer array (qwen35
  // allows one for feed_forward_length) is accepted when all its entries
  // agree: bonsai runs one size for every layer.
  int64_t count(const std::string &name, int64_t max) const {
    const gguf::Value *value = file_.find(key(name));
    uint64_t v = 0;
    if (value != nullptr && value->type == gguf::ValueType::ARRAY) {
      const gguf::Array &items = value->as_array(key(name));
      if (items.items.empty())
        fail(key(name) + " is an empty array");
      v = items.items[0].as_u64(key(name));
      for (const gguf::Value &item : items.items)
        if (item.as_u64(key(name)) != v)
          fail(key(name) + " differs between layers (not supported: bonsai runs one size)");
    } else {
      v = file_.get_u64(key(name));
    }
    if (v == 0 || v > static_cast<uint64_t>(max))
      fail(key(name) + " " + std::to_string(v) + " is out of range (1.." + std::to_string(max) +
           ")");
    return static_cast<int64_t>(v);
  }

  // An optional whole number in [0, max], `fallback` when absent.
  int64_t whole(const std::string &name, int64_t fallback, int64_t max) const {
    if (!has(name))
      return fallback;
    const uint64_t v = file_.get_u64(key(name));
    if (v > static_cast<uint64_t>(max))
      fail(key(name) + " " + std::to_string(v) + " is out of range (0.." + std::to_string(max) +
           ")");
    return static_cast<int64_t>(v);
  }

  const gguf::File &file() const { return file_; }

  // An optional positive, finite float. Checked as the float it is stored
  // as: a double too small for a float would round to 0.
  float positive(const std::string &name, float fallback, double max) const {
    if (!has(name))
      return fallback;
    const double v = file_.get_f64(key(name));
    if (!std::isfinite(v) || !(static_cast<float>(v) > 0.0f) || v >= max)
      fail(key(name) + " " + std::to_string(v) + " is out of range (must be > 0 and < " +
           std::to_string(max) + ")");
    return static_cast<float>(v);
  }

private:
  const gguf::File &file_;
  std::string arch_;
};

// qwen35's layer kinds, conv and DeltaNet sizes, partial M-RoPE and MTP
// depth (../docs/models.md). Called after the common keys; h.n_layer is
// still block_count and becomes the trunk depth here.
HybridHparams read_hybrid(const HparamReader &r, Qwen3Hparams &h) {
  HybridHparams y;
  y.n_nextn = r.whole("nextn_predict_layers", 0, h.n_layer - 1);
  h.n_layer -= y.n_nextn;

  DeltaNetHparams &g = y.delta_net;
  g.conv_kernel = r.count("ssm.conv_kernel", 64);
  g.head_dim = r.count("ssm.state_size", kMaxHeadDim);
  g.n_v_heads = r.count("ssm.time_step_rank", kMaxHeads);
  g.n_k_heads = r.count("ssm.group_count", kMaxHeads);
  const int64_t inner = r.count("ssm.inner_size", kMaxFf);
  if (inner != g.value_dim())
    r.fail(r.key("ssm.inner_size") + " " + std::to_string(inner) + " is not time_step_rank " +
           std::to_string(g.n_v_heads) + " x state_size " + std::to_string(g.head_dim));

  y.n_rot = r.whole("rope.dimension_count", h.head_dim, h.head_dim);
  if (y.n_rot == 0 || y.n_rot % 2 != 0)
    r.fail(r.key("rope.dimension_count") + " " + std::to_string(y.n_rot) +
           " must be even and at least 2 (RoPE rotates pairs)");
  const gguf::Value *sections = r.file().find(r.key("rope.dimension_sections"));
  if (sections == nullptr)
    r.fail("missing key " + r.key("rope.dimension_sections") + " (4 integers)");
  const gguf::Array &items = sections->as_array(r.key("rope.dimension_sections"));
  if (items.items.size() != 4)
    r.fail(r.key("rope.dimension_sections") + " has " + std::to_string(items.items.size()) +
           " entries, expected 4");
  for (size_t i = 0; i < 4; ++i) {
    const int64_t v = items.items[i].as_i64(r.key("rope.dimension_sections"));
    if (v < 0 || v > kMaxHeadDim)
      r.fail(r.key("rope.dimension_sections") + " entry " + std::to_string(v) +
             " is out of range (0.." + std::to_string(kMaxHeadDim) + ")");
    y.rope_sections[i] = v;
  }
  if (y.rope_sections[0] + y.rope_sections[1] + y.rope_sections[2] + y.rope_sections[3] == 0)
    r.fail(r.key("rope.dimension_sections") + " are all 0");

  // Which layers are recurrent: an explicit per-block list, else every
  // interval-th layer is attention and the rest are gated DeltaNet.
  y.recurrent.resize(static_cast<size_t>(h.n_layer));
  if (const gguf::Value *list = r.file().find(r.key("attention.recurrent_layers"))) {
    const gguf::Array &flags = list->as_array(r.key("attention.recurrent_layers"));
    if (flags.items.size() != static_cast<size_t>(h.n_layer + y.n_nextn))
      r.fail(r.key("attention.recurrent_layers") + " has " + std::to_string(flags.items.size()) +
             " entries, expected block_count " + std::to_string(h.n_layer + y.n_nextn));
    for (int64_t i = 0; i < h.n_layer; ++i)
      y.recurrent[static_cast<size_t>(i)] =
          flags.items[static_cast<size_t>(i)].as_bool(r.key("attention.recurrent_layers"));
  } else {
    const int64_t interval = r.whole("full_attention_interval", 4, kMaxLayers);
    if (interval == 0)
      r.fail(r.key("full_attention_interval") + " is 0");
    for (int64_t i = 0; i < h.n_layer; ++i)
      y.recurrent[static_cast<size_t>(i)] = (i + 1) % interval != 0;
  }
  return y;
}

} // namespace

Qwen3Hparams read_qwen3_hparams(const gguf::File &file) {
  const std::string arch = file.get_string("general.architecture");
  const HparamReader r(file, arch);
  Qwen3Hparams h;
  if (arch == "qwen35")
    h.arch = Architecture::qwen35;
  else if (arch != "qwen3")
    r.fail("unsupported architecture '" + arch + "' (bonsai runs qwen3 and qwen35)");

  h.n_embd = r.count("embedding_length", kMaxEmbd);
  h.n_layer = r.count("block_count", kMaxLayers);
  h.n_head = r.count("attention.head_count", kMaxHeads);
  h.n_head_kv = r.count("attention.head_count_kv", kMaxHeads);
  h.n_ff = r.count("feed_forward_length", kMaxFf);
  h.n_ctx_train = r.count("context_length", kMaxCtx);
  if (h.n_head % h.n_head_kv != 0)
    r.fail(r.key("attention.head_count") + " " + std::to_string(h.n_head) +
           " is not a multiple of " + r.key("attention.head_count_kv") + " " +
           std::to_string(h.n_head_kv));

  if (r.has("attention.key_length")) {
    h.head_dim = r.count("attention.key_length", kMaxHeadDim);
  } else {
    if (h.n_embd % h.n_head != 0)
      r.fail("no " + r.key("attention.key_length") + ", and embedding_length " +
             std::to_string(h.n_embd) + " is not a multiple of head_count " +
             std::to_string(h.n_head));
    h.head_dim = h.n_embd / h.n_head;
    if (h.head_dim > kMaxHeadDim)
      r.fail("head dim " + std::to_string(h.head_dim) + " is out of range (1.." +
             std::to_string(kMaxHeadDim) + ")");
  }
  if (h.head_dim % 2 != 0)
    r.fail("head dim " + std::to_string(h.head_dim) + " is odd (RoPE rotates pairs)");
  if (r.has("attention.value_length")) {
    const int64_t v = r.count("attention.value_length", kMaxHeadDim);
    if (v != h.head_dim)
      r.fail(r.key("attention.value_length") + " " + std::to_string(v) +
             " differs from key_length " + std::to_string(h.head_dim) + " (not supported)");
  }

  if (h.arch == Architecture::qwen35)
    h.hybrid = read_hybrid(r, h);
  read_forward_pass_keys(file, arch, h);
  h.rms_eps = r.positive("attention.layer_norm_rms_epsilon", 1e-6f, 1.0);

  const gguf::TensorInfo *embd = file.find_tensor("token_embd.weight");
  if (!embd)
    r.fail("missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2)
    r.fail("tensor 'token_embd.weight' has " + std::to_string(embd->dims.size()) +
           " dimensions, expected 2 ([n_embd, n_vocab])");
  h.n_vocab = embd->dims[1];
  if (h.n_vocab < 1 || h.n_vocab > kMaxVocab)
    r.fail("vocabulary size " + std::to_string(h.n_vocab) +
           " (rows of token_embd.weight) is out of range (1.." + std::to_string(kMaxVocab) + ")");
  return h;
}

} // namespace bonsai
