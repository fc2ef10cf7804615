// ModelSpec::from_gguf: find every Qwen3 weight, check its shape and type.
#include <string>

#include "bonsai/core/error.hpp"
#include "bonsai/core/model_spec.hpp"
#include "hparams.hpp"

namespace bonsai {

namespace {

std::string shape_text(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// The expected shape and its meaning, e.g. {512, 256} "[n_embd, n_kv * head_dim]".
struct Shape {
  std::vector<int64_t> dims;
  const char *meaning;
};

enum class Role { Matrix, Norm };

class TensorLoader {
public:
  explicit TensorLoader(const gguf::File &file) : file_(file) {}

  [[noreturn]] void fail(const std::string &what) const { throw Error(file_.path() + ": " + what); }

  TensorView load(const std::string &name, const Shape &shape, Role role) const {
    const gguf::TensorInfo *t = file_.find_tensor(name);
    if (!t)
      fail("missing tensor '" + name + "' (expected shape " + shape_text(shape.dims) + " " +
           shape.meaning + ")");
    return check(*t, shape, role);
  }

  std::optional<TensorView> load_optional(const std::string &name, const Shape &shape,
                                          Role role) const {
    const gguf::TensorInfo *t = file_.find_tensor(name);
    if (!t)
      return std::nullopt;
    return check(*t, shape, role);
  }

private:
  TensorView check(const gguf::TensorInfo &t, const Shape &shape, Role role) const {
    if (t.dims != shape.dims)
      fail("tensor '" + t.name + "' has shape " + shape_text(t.dims) + ", expected " +
           shape_text(shape.dims) + " " + shape.meaning);
    // Norm weights multiply activations elementwise: they must be plain floats.
    const GgmlType type = t.type();
    if (role == Role::Norm && type != GgmlType::F32 && type != GgmlType::F16 &&
        type != GgmlType::BF16)
      fail("norm tensor '" + t.name + "' has type " + std::string(type_name(t.type_id)) +
           ", expected f32, f16 or bf16");
    return TensorView{t.name, type, t.dims, t.data, t.nbytes};
  }

  const gguf::File &file_;
};

LayerWeights load_layer(const TensorLoader &loader, const Qwen3Hparams &h, int64_t layer) {
  const int64_t q_dim = h.n_head * h.head_dim;
  const int64_t kv_dim = h.n_head_kv * h.head_dim;
  const std::string prefix = "blk." + std::to_string(layer) + ".";
  const auto load = [&](const char *name, Shape shape, Role role) {
    return loader.load(prefix + name + ".weight", shape, role);
  };
  LayerWeights w;
  w.attn_norm = load("attn_norm", {{h.n_embd}, "[n_embd]"}, Role::Norm);
  w.attn_q = load("attn_q", {{h.n_embd, q_dim}, "[n_embd, n_head * head_dim]"}, Role::Matrix);
  w.attn_k = load("attn_k", {{h.n_embd, kv_dim}, "[n_embd, n_head_kv * head_dim]"}, Role::Matrix);
  w.attn_v = load("attn_v", {{h.n_embd, kv_dim}, "[n_embd, n_head_kv * head_dim]"}, Role::Matrix);
  w.attn_q_norm = load("attn_q_norm", {{h.head_dim}, "[head_dim]"}, Role::Norm);
  w.attn_k_norm = load("attn_k_norm", {{h.head_dim}, "[head_dim]"}, Role::Norm);
  w.attn_output =
      load("attn_output", {{q_dim, h.n_embd}, "[n_head * head_dim, n_embd]"}, Role::Matrix);
  w.ffn_norm = load("ffn_norm", {{h.n_embd}, "[n_embd]"}, Role::Norm);
  w.ffn_gate = load("ffn_gate", {{h.n_embd, h.n_ff}, "[n_embd, n_ff]"}, Role::Matrix);
  w.ffn_up = load("ffn_up", {{h.n_embd, h.n_ff}, "[n_embd, n_ff]"}, Role::Matrix);
  w.ffn_down = load("ffn_down", {{h.n_ff, h.n_embd}, "[n_ff, n_embd]"}, Role::Matrix);
  return w;
}

// A qwen35 layer: gated DeltaNet (`recurrent`) or gated attention, then the
// usual MLP (docs/models.md). An MTP layer past the trunk is an attention
// layer (read_mtp_weights).
LayerWeights load_hybrid_layer(const TensorLoader &loader, const Qwen3Hparams &h, int64_t layer,
                               bool recurrent) {
  const HybridHparams &y = *h.hybrid;
  const DeltaNetHparams &g = y.delta_net;
  const std::string prefix = "blk." + std::to_string(layer) + ".";
  const auto load = [&](const std::string &name, Shape shape, Role role) {
    return loader.load(prefix + name, shape, role);
  };
  LayerWeights w;
  w.attn_norm = load("attn_norm.weight", {{h.n_embd}, "[n_embd]"}, Role::Norm);
  if (recurrent) {
    DeltaNetWeights d;
    d.qkv = load("attn_qkv.weight", {{h.n_embd, g.conv_dim()}, "[n_embd, 2 * key_dim + value_dim]"},
                 Role::Matrix);
    d.gate =
        load("attn_gate.weight", {{h.n_embd, g.value_dim()}, "[n_embd, value_dim]"}, Role::Matrix);
    d.conv = load("ssm_conv1d.weight", {{g.conv_kernel, g.conv_dim()}, "[conv_kernel, conv_dim]"},
                  Role::Norm);
    d.dt_bias = load("ssm_dt.bias", {{g.n_v_heads}, "[time_step_rank]"}, Role::Norm);
    d.a = load("ssm_a", {{g.n_v_heads}, "[time_step_rank]"}, Role::Norm);
    d.beta = load("ssm_beta.weight", {{h.n_embd, g.n_v_heads}, "[n_embd, time_step_rank]"},
                  Role::Matrix);
    d.alpha = load("ssm_alpha.weight", {{h.n_embd, g.n_v_heads}, "[n_embd, time_step_rank]"},
                   Role::Matrix);
    d.norm = load("ssm_norm.weight", {{g.head_dim}, "[state_size]"}, Role::Norm);
    d.out =
        load("ssm_out.weight", {{g.value_dim(), h.n_embd}, "[value_dim, n_embd]"}, Role::Matrix);
    w.delta_net = std::move(d);
  } else {
    const int64_t q_dim = h.n_head * h.head_dim;
    const int64_t kv_dim = h.n_head_kv * h.head_dim;
    w.attn_q = load("attn_q.weight", {{h.n_embd, 2 * q_dim}, "[n_embd, 2 * n_head * head_dim]"},
                    Role::Matrix);
    w.attn_k =
        load("attn_k.weight", {{h.n_embd, kv_dim}, "[n_embd, n_head_kv * head_dim]"}, Role::Matrix);
    w.attn_v =
        load("attn_v.weight", {{h.n_embd, kv_dim}, "[n_embd, n_head_kv * head_dim]"}, Role::Matrix);
    w.attn_q_norm = load("attn_q_norm.weight", {{h.head_dim}, "[head_dim]"}, Role::Norm);
    w.attn_k_norm = load("attn_k_norm.weight", {{h.head_dim}, "[head_dim]"}, Role::Norm);
    w.attn_output = load("attn_output.weight", {{q_dim, h.n_embd}, "[n_head * head_dim, n_embd]"},
                         Role::Matrix);
  }
  w.ffn_norm = load("post_attention_norm.weight", {{h.n_embd}, "[n_embd]"}, Role::Norm);
  w.ffn_gate = load("ffn_gate.weight", {{h.n_embd, h.n_ff}, "[n_embd, n_ff]"}, Role::Matrix);
  w.ffn_up = load("ffn_up.weight", {{h.n_embd, h.n_ff}, "[n_embd, n_ff]"}, Role::Matrix);
  w.ffn_down = load("ffn_down.weight", {{h.n_ff, h.n_embd}, "[n_ff, n_embd]"}, Role::Matrix);
  return w;
}

// A layer's views in order of use, the absent ones left out.
std::vector<const TensorView *> layer_tensors(const LayerWeights &l) {
  std::vector<const TensorView *> views{&l.attn_norm};
  if (const auto &d = l.delta_net)
    views.insert(views.end(), {&d->qkv, &d->gate, &d->conv, &d->dt_bias, &d->a, &d->beta, &d->alpha,
                               &d->norm, &d->out});
  else
    views.insert(views.end(),
                 {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_q_norm, &l.attn_k_norm, &l.attn_output});
  views.insert(views.end(), {&l.ffn_norm, &l.ffn_gate, &l.ffn_up, &l.ffn_down});
  return views;
}

} // namespace

ModelSpec ModelSpec::from_gguf(const gguf::File &file) {
  ModelSpec spec;
  spec.hparams = read_qwen3_hparams(file);
  const Qwen3Hparams &h = spec.hparams;
  const TensorLoader loader(file);
  spec.token_embd =
      loader.load("token_embd.weight", {{h.n_embd, h.n_vocab}, "[n_embd, n_vocab]"}, Role::Matrix);
  spec.layers.reserve(static_cast<size_t>(h.n_layer));
  for (int64_t i = 0; i < h.n_layer; ++i)
    spec.layers.push_back(
        h.hybrid ? load_hybrid_layer(loader, h, i, h.hybrid->recurrent[static_cast<size_t>(i)])
                 : load_layer(loader, h, i));
  spec.output_norm = loader.load("output_norm.weight", {{h.n_embd}, "[n_embd]"}, Role::Norm);
  spec.output = loader.load_optional("output.weight", {{h.n_embd, h.n_vocab}, "[n_embd, n_vocab]"},
                                     Role::Matrix);
  return spec;
}

MtpWeights read_mtp_weights(const gguf::File &file, const Qwen3Hparams &h) {
  const TensorLoader loader(file);
  if (!h.hybrid)
    loader.fail("an MTP layer is a qwen35 model's; this model is qwen3");
  if (h.hybrid->n_nextn < 1)
    loader.fail("the model has no MTP layer (qwen35.nextn_predict_layers is 0)");
  MtpWeights m;
  m.index = h.n_layer;
  m.layer = load_hybrid_layer(loader, h, m.index, false);
  const std::string p = "blk." + std::to_string(m.index) + ".nextn.";
  const Shape vector{{h.n_embd}, "[n_embd]"};
  const Shape table{{h.n_embd, h.n_vocab}, "[n_embd, n_vocab]"};
  m.eh_proj = loader.load(p + "eh_proj.weight", {{2 * h.n_embd, h.n_embd}, "[2 * n_embd, n_embd]"},
                          Role::Matrix);
  m.enorm = loader.load(p + "enorm.weight", vector, Role::Norm);
  m.hnorm = loader.load(p + "hnorm.weight", vector, Role::Norm);
  m.embed_tokens = loader.load_optional(p + "embed_tokens.weight", table, Role::Matrix);
  m.shared_head_head = loader.load_optional(p + "shared_head_head.weight", table, Role::Matrix);
  m.shared_head_norm = loader.load_optional(p + "shared_head_norm.weight", vector, Role::Norm);
  return m;
}

std::vector<const TensorView *> MtpWeights::all_tensors() const {
  std::vector<const TensorView *> all = layer_tensors(layer);
  all.insert(all.end(), {&eh_proj, &enorm, &hnorm});
  for (const auto *t : {&embed_tokens, &shared_head_head, &shared_head_norm})
    if (*t)
      all.push_back(&**t);
  return all;
}

std::vector<const TensorView *> ModelSpec::all_tensors() const {
  std::vector<const TensorView *> all{&token_embd};
  for (const LayerWeights &l : layers)
    for (const TensorView *t : layer_tensors(l))
      all.push_back(t);
  all.push_back(&output_norm);
  if (output)
    all.push_back(&*output);
  return all;
}

int64_t ModelSpec::n_params() const {
  int64_t n = 0;
  for (const TensorView *t : all_tensors())
    n += t->n_elements();
  return n;
}

size_t ModelSpec::weight_bytes() const {
  size_t n = 0;
  for (const TensorView *t : all_tensors())
    n += t->nbytes;
  return n;
}

int64_t TensorView::rows() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i)
    n *= dims[i];
  return n;
}

} // namespace bonsai
