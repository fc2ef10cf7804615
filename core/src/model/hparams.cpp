// Qwen3 hyper-parameters from the qwen3.* metadata keys.
#include <cmath>
#include <string>

#include "bonsai/core/error.hpp"
#include "hparams.hpp"

namespace bonsai {

namespace {

constexpr const char *kArch = "qwen3";

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
  explicit HparamReader(const gguf::File &file) : file_(file) {}

  [[noreturn]] void fail(const std::string &what) const { throw Error(file_.path() + ": " + what); }

  static std::string key(const std::string &name) { return std::string(kArch) + "." + name; }

  bool has(const std::string &name) const { return file_.find(key(name)) != nullptr; }

  // A required positive integer in [1, max].
  int64_t count(const std::string &name, int64_t max) const {
    const uint64_t v = file_.get_u64(key(name));
    if (v == 0 || v > static_cast<uint64_t>(max))
      fail(key(name) + " " + std::to_string(v) + " is out of range (1.." + std::to_string(max) +
           ")");
    return static_cast<int64_t>(v);
  }

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
};

} // namespace

Qwen3Hparams read_qwen3_hparams(const gguf::File &file) {
  const HparamReader r(file);
  const std::string arch = file.get_string("general.architecture");
  if (arch != kArch)
    r.fail("unsupported architecture '" + arch + "' (bonsai runs qwen3)");

  Qwen3Hparams h;
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

  read_forward_pass_keys(file, kArch, h);
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
