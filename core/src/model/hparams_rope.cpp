// The metadata keys that change the forward pass beyond the basic shape:
// RoPE scaling is read and honoured, everything else that would change the
// math is refused by name, so no file is ever computed as another model.
#include <algorithm>
#include <cmath>
#include <string>

#include "bonsai/core/error.hpp"
#include "hparams.hpp"

namespace bonsai {
namespace {

class KeyReader {
public:
  KeyReader(const gguf::File &file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  std::string key(const std::string &name) const { return arch_ + "." + name; }
  const gguf::Value *find(const std::string &name) const { return file_.find(key(name)); }

  [[noreturn]] void refuse(const std::string &name, const std::string &value,
                           const std::string &why) const {
    throw Error(file_.path() + ": " + key(name) + " = " + value + ": " + why);
  }

  // A positive, finite float, or `fallback` when absent. It must stay so as a
  // float, the type the callers keep (a tiny double rounds to 0, a huge one
  // overflows).
  double positive(const std::string &name, double fallback) const {
    if (!find(name))
      return fallback;
    const double v = file_.get_f64(key(name));
    const float stored = static_cast<float>(v);
    if (!std::isfinite(v) || !std::isfinite(stored) || !(stored > 0.0f))
      refuse(name, std::to_string(v), "must be a positive number");
    return v;
  }

  // Keys whose only supported value is the neutral one.
  void require_value(const std::string &name, double neutral, const std::string &why) const {
    if (!find(name))
      return;
    const double v = file_.get_f64(key(name));
    if (!(std::fabs(v - neutral) <= 1e-6 * std::max(1.0, std::fabs(neutral))))
      refuse(name, std::to_string(v),
             why + " (bonsai supports only " + std::to_string(neutral) + ")");
  }

  void require_absent(const std::string &name, const std::string &why) const {
    if (find(name))
      refuse(name, "present", why + "; bonsai does not implement it");
  }

  const gguf::File &file() const { return file_; }

private:
  const gguf::File &file_;
  std::string arch_;
};

RopeSettings read_rope(const KeyReader &r, const Qwen3Hparams &h) {
  RopeSettings rope;
  rope.freq_base =
      static_cast<float>(r.positive("rope.freq_base", h.arch == Architecture::qwen35 ? 1e4 : 1e6));
  if (rope.freq_base >= 1e12f)
    r.refuse("rope.freq_base", std::to_string(rope.freq_base), "is out of range (< 1e12)");
  if (r.find("rope.scaling.type")) {
    const std::string name = r.file().get_string(r.key("rope.scaling.type"));
    const auto type = rope_scaling_from_name(name);
    if (!type)
      r.refuse("rope.scaling.type", "'" + name + "'",
               "unknown rope scaling (bonsai implements none, linear and yarn)");
    rope.scaling = *type;
  }
  if (r.find("rope.scale_linear")) { // the older spelling of linear scaling
    if (rope.scaling == RopeScalingType::None)
      rope.scaling = RopeScalingType::Linear;
    rope.factor = static_cast<float>(r.positive("rope.scale_linear", 1.0));
  }
  rope.factor = static_cast<float>(r.positive("rope.scaling.factor", rope.factor));
  if (rope.factor < 1.0f)
    r.refuse("rope.scaling.factor", std::to_string(rope.factor),
             "a context-extension factor must be at least 1");
  const double original_context =
      r.positive("rope.scaling.original_context_length", static_cast<double>(h.n_ctx_train));
  if (original_context < 1.0 || original_context > 1e9)
    r.refuse("rope.scaling.original_context_length", std::to_string(original_context),
             "must be a number of positions in 1..1e9");
  rope.original_context = static_cast<int64_t>(original_context);
  rope.yarn_beta_fast = static_cast<float>(r.positive("rope.scaling.yarn_beta_fast", 32.0));
  rope.yarn_beta_slow = static_cast<float>(r.positive("rope.scaling.yarn_beta_slow", 1.0));
  r.require_value("rope.scaling.attn_factor", 1.0, "scales attention logits");
  r.require_value("rope.scaling.yarn_ext_factor", 1.0, "changes the YaRN ramp");
  r.require_value("rope.scaling.yarn_attn_factor", 1.0, "changes the YaRN magnitude");
  r.require_value("rope.scaling.yarn_log_multiplier", 0.0, "changes the YaRN magnitude");
  return rope;
}

} // namespace

void read_forward_pass_keys(const gguf::File &file, const std::string &arch, Qwen3Hparams &h) {
  const KeyReader r(file, arch);
  h.rope = read_rope(r, h);
  // Partial, sectioned rotation is part of qwen35 (read in hparams.cpp), and
  // llama.cpp never reads attention.scale for it: 1/sqrt(head_dim) always.
  if (h.arch != Architecture::qwen35) {
    if (r.find("rope.dimension_count")) {
      const uint64_t n_rot = file.get_u64(r.key("rope.dimension_count"));
      if (static_cast<int64_t>(n_rot) != h.head_dim)
        r.refuse("rope.dimension_count", std::to_string(n_rot),
                 "a partial rotary embedding (head dim " + std::to_string(h.head_dim) +
                     "); bonsai rotates whole heads");
    }
    r.require_absent("rope.dimension_sections", "multi-section (M-RoPE) rotary embedding");
    r.require_value("attention.scale", 1.0 / std::sqrt(static_cast<double>(h.head_dim)),
                    "a custom attention scale");
  }
  r.require_absent("attention.layer_norm_epsilon", "LayerNorm instead of RMSNorm");
  r.require_absent("attention.sliding_window", "sliding-window attention");
  r.require_absent("attention.clamp_kqv", "clamped Q/K/V");
  r.require_value("attn_logit_softcapping", 0.0, "soft-capped attention logits");
  r.require_value("final_logit_softcapping", 0.0, "soft-capped output logits");
  r.require_value("logit_scale", 1.0, "scaled output logits");
  r.require_value("embedding_scale", 1.0, "scaled embeddings");
  r.require_value("residual_scale", 1.0, "scaled residuals");
  r.require_value("expert_count", 0.0, "a mixture of experts");
  if (r.find("attention.causal") && !file.find(r.key("attention.causal"))->as_bool("causal"))
    r.refuse("attention.causal", "false", "non-causal attention; bonsai runs decoders");
}

std::vector<double> attention_rope_rates(const Qwen3Hparams &h) {
  if (!h.hybrid)
    return rope_inv_freq(h.rope, h.head_dim);
  std::vector<double> rates = rope_inv_freq(h.rope, h.hybrid->n_rot);
  // M-RoPE gives pair i the time, height, width or extra position by its
  // section; a text token has time = height = width = its position and
  // extra = 0, and a 0 angle is a rate of 0.
  const auto &sec = h.hybrid->rope_sections;
  const int64_t period = sec[0] + sec[1] + sec[2] + sec[3];
  for (size_t i = 0; i < rates.size(); ++i) {
    const int64_t s = static_cast<int64_t>(i) % period;
    const bool positional = (s % 3 == 0 && s < 3 * sec[0]) || (s % 3 == 1 && s < 3 * sec[1]) ||
                            (s % 3 == 2 && s < 3 * sec[2]);
    if (!positional)
      rates[i] = 0.0;
  }
  return rates;
}

} // namespace bonsai
