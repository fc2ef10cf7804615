// bonsai-gguf make-model: a synthetic Qwen3 (or qwen35, Bonsai-27B) GGUF of a
// real Bonsai shape with random 1-bit or ternary weights and a real tokenizer, for benchmarks and
// end-to-end tests (same bytes moved and same work as the real model).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "command.hpp"
#include "command_line.hpp"
#include "make_model_head.hpp"
#include "make_model_perturb.hpp"
#include "make_model_vocab.hpp"
#include "make_model_weights.hpp"

namespace bonsai::tools {
namespace {

constexpr int64_t kQwen3PaddedVocab = 151936;
constexpr int64_t kDefaultContext = 40960; // Qwen3 max_position_embeddings
constexpr float kRopeFreqBase = 1e6f;
constexpr float kHybridRopeFreqBase = 1e7f; // Qwen3.5/3.6
constexpr float kRmsEps = 1e-6f;

// What a qwen35 model adds (docs/models.md); a shape without it is qwen3.
struct HybridShape {
  int64_t k_heads = 0;            // ssm.group_count
  int64_t v_heads = 0;            // ssm.time_step_rank
  int64_t head_dim = 0;           // ssm.state_size
  int64_t conv_kernel = 4;        // ssm.conv_kernel
  int64_t rope_dims = 0;          // rope.dimension_count
  int64_t attention_interval = 4; // full_attention_interval
};

// qwen35's multi-token-prediction layer after the trunk (--mtp).
enum class MtpKind {
  none,
  random, // random weights, like the trunk's
  // it predicts what the trunk predicts when its layers write nothing: the
  // LM head of the next token's normed embedding (eh_proj passes e's half
  // through, its attention and MLP write nothing)
  agree,
};

struct ModelShape {
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t ffn = 0;
  int64_t head_dim = 128;
  int64_t vocab = kQwen3PaddedVocab;
  int64_t context = kDefaultContext;
  bool tied = false;
  std::optional<HybridShape> hybrid;
  MtpKind mtp = MtpKind::none;
};

// docs/architecture.md, "The model"; tiny matches the golden test models.
const std::map<std::string, ModelShape> &presets() {
  static const std::map<std::string, ModelShape> all = {
      {"1.7b",
       {2048, 28, 16, 8, 6144, 128, kQwen3PaddedVocab, kDefaultContext, true, std::nullopt}},
      {"4b", {2560, 36, 32, 8, 9728, 128, kQwen3PaddedVocab, kDefaultContext, true, std::nullopt}},
      {"8b",
       {4096, 36, 32, 8, 12288, 128, kQwen3PaddedVocab, kDefaultContext, false, std::nullopt}},
      {"tiny", {512, 4, 4, 2, 1536, 128, kQwen3PaddedVocab, 4096, false, std::nullopt}},
      // qwen35: Qwen3.6-27B's published shape (the GDN head split is the
      // likely one: 16 q/k and 48 value heads of 128) with Qwen3's vocabulary;
      // tiny-q35 is the golden qwen35 models' shape.
      {"27b",
       {5120, 64, 24, 4, 17408, 256, kQwen3PaddedVocab, 262144, false,
        HybridShape{16, 48, 128, 4, 64, 4}}},
      {"tiny-q35",
       {512, 4, 4, 2, 1024, 128, kQwen3PaddedVocab, 8192, false, HybridShape{2, 4, 64, 4, 32, 4}}},
  };
  return all;
}

// Q1_0 and Q2_0 as llama.cpp's file-type ids for "mostly" that type (what
// the golden models carry in general.file_type).
// general.file_type: llama.cpp's ftype for TQ1_0/TQ2_0 (36, 37); 40 for
// Q1_0 and 41 for the other ternary files, as PrismML's files carry.
uint32_t file_type_of(GgmlType type) {
  switch (type) {
  case GgmlType::Q1_0:
    return 40;
  case GgmlType::TQ1_0:
    return 36;
  case GgmlType::TQ2_0:
    return 37;
  default:
    return 41;
  }
}

// Every check of the options is about a value on the command line.
void require(bool ok, const std::string &message) {
  if (!ok)
    throw UsageError(message);
}

void validate(const ModelShape &s, GgmlType type) {
  const std::string block = std::to_string(traits_of(type).block_elements);
  require(s.hidden > 0 && s.layers > 0 && s.heads > 0 && s.kv_heads > 0 && s.ffn > 0 &&
              s.head_dim > 0 && s.vocab > 0 && s.context > 0,
          "every dimension must be positive");
  require(s.hidden % traits_of(type).block_elements == 0,
          "--hidden " + std::to_string(s.hidden) + " must be a multiple of " + block);
  require(s.ffn % traits_of(type).block_elements == 0,
          "--ffn " + std::to_string(s.ffn) + " must be a multiple of " + block);
  require((s.heads * s.head_dim) % traits_of(type).block_elements == 0,
          "--heads x --head-dim must be a multiple of " + block);
  require(s.head_dim % 2 == 0, "--head-dim must be even (RoPE rotates pairs)");
  require(s.heads % s.kv_heads == 0, "--heads " + std::to_string(s.heads) +
                                         " must be a multiple of --kv-heads " +
                                         std::to_string(s.kv_heads));
  if (const auto &y = s.hybrid) {
    require(y->k_heads > 0 && y->v_heads > 0 && y->head_dim > 0 && y->conv_kernel > 0 &&
                y->rope_dims > 0 && y->attention_interval > 0,
            "every qwen35 dimension must be positive");
    require((y->v_heads * y->head_dim) % traits_of(type).block_elements == 0,
            "value heads x state size must be a multiple of " + block);
    require(y->rope_dims % 2 == 0 && y->rope_dims <= s.head_dim,
            "rotary dims must be even and at most the head dim");
  }
  const int64_t limit = std::numeric_limits<int32_t>::max();
  require(s.hidden <= limit && s.ffn <= limit && s.vocab <= limit && s.layers <= 100000 &&
              s.heads * s.head_dim <= limit && s.context <= limit,
          "a dimension is too large for a GGUF model");
}

// How a tensor's values are made: a random matrix of --type, or f32 values
// uniform in a range (norms near 1; qwen35's conv taps, decay rates and
// biases in their own ranges).
struct FloatRange {
  float low = 0.8f, high = 1.2f;
};

// A tensor whose values are not random: an --mtp agree layer's.
enum class FixedValues {
  none,
  ones,          // an f32 norm of 1s
  left_identity, // q8_0 [2n, n]: row r has 1 in column r, so y = the input's first half
  zero_gain,     // a random matrix of --type scaled by 0
};

struct PlannedTensor {
  std::string name;
  std::vector<int64_t> dims; // ne0 first
  std::optional<FloatRange> floats;
  FixedValues fixed = FixedValues::none;
};

constexpr FloatRange kNorm{};

// A qwen35 layer: gated DeltaNet, or gated attention (query and gate
// interleaved in attn_q) every attention_interval-th layer; then the MLP.
void plan_hybrid_layer(const ModelShape &s, int64_t i, std::vector<PlannedTensor> &t) {
  const HybridShape &y = *s.hybrid;
  const std::string p = "blk." + std::to_string(i) + ".";
  const int64_t key_dim = y.k_heads * y.head_dim;
  const int64_t value_dim = y.v_heads * y.head_dim;
  const int64_t conv_dim = 2 * key_dim + value_dim;
  t.push_back({p + "attn_norm.weight", {s.hidden}, kNorm});
  const bool mtp_layer = i >= s.layers; // always gated attention
  if (!mtp_layer && (i + 1) % y.attention_interval != 0) {
    t.push_back({p + "attn_qkv.weight", {s.hidden, conv_dim}, {}});
    t.push_back({p + "attn_gate.weight", {s.hidden, value_dim}, {}});
    t.push_back({p + "ssm_conv1d.weight", {y.conv_kernel, conv_dim}, FloatRange{-0.5f, 0.5f}});
    t.push_back({p + "ssm_dt.bias", {y.v_heads}, FloatRange{-1.0f, 1.0f}});
    t.push_back({p + "ssm_a", {y.v_heads}, FloatRange{-2.0f, -0.5f}}); // -exp(A_log) < 0
    t.push_back({p + "ssm_beta.weight", {s.hidden, y.v_heads}, {}});
    t.push_back({p + "ssm_alpha.weight", {s.hidden, y.v_heads}, {}});
    t.push_back({p + "ssm_norm.weight", {y.head_dim}, kNorm});
    t.push_back({p + "ssm_out.weight", {value_dim, s.hidden}, {}});
  } else {
    const int64_t q_width = s.heads * s.head_dim;
    const int64_t kv_width = s.kv_heads * s.head_dim;
    t.push_back({p + "attn_q.weight", {s.hidden, 2 * q_width}, {}});
    t.push_back({p + "attn_k.weight", {s.hidden, kv_width}, {}});
    t.push_back({p + "attn_v.weight", {s.hidden, kv_width}, {}});
    t.push_back({p + "attn_output.weight", {q_width, s.hidden}, {}});
    t.push_back({p + "attn_q_norm.weight", {s.head_dim}, kNorm});
    t.push_back({p + "attn_k_norm.weight", {s.head_dim}, kNorm});
  }
  t.push_back({p + "post_attention_norm.weight", {s.hidden}, kNorm});
  t.push_back({p + "ffn_gate.weight", {s.hidden, s.ffn}, {}});
  t.push_back({p + "ffn_up.weight", {s.hidden, s.ffn}, {}});
  t.push_back({p + "ffn_down.weight", {s.ffn, s.hidden}, {}});
}

// The MTP layer, blk.<layers>: a gated attention layer and its MLP, then
// the nextn tensors (docs/models.md, "The MTP layer"; no embedding, head or
// head norm of its own: the model's serve).
void plan_mtp_layer(const ModelShape &s, std::vector<PlannedTensor> &t) {
  const size_t first = t.size();
  plan_hybrid_layer(s, s.layers, t);
  const std::string p = "blk." + std::to_string(s.layers) + ".nextn.";
  t.push_back({p + "eh_proj.weight", {2 * s.hidden, s.hidden}, {}});
  t.push_back({p + "enorm.weight", {s.hidden}, kNorm});
  t.push_back({p + "hnorm.weight", {s.hidden}, kNorm});
  if (s.mtp != MtpKind::agree)
    return;
  for (size_t i = first; i < t.size(); ++i) {
    PlannedTensor &planned = t[i];
    if (planned.name.ends_with("eh_proj.weight"))
      planned.fixed = FixedValues::left_identity;
    else if (planned.name.ends_with("enorm.weight"))
      planned.fixed = FixedValues::ones;
    else if (planned.name.ends_with(".attn_output.weight") ||
             planned.name.ends_with(".ffn_down.weight"))
      planned.fixed = FixedValues::zero_gain;
  }
}

std::vector<PlannedTensor> plan_tensors(const ModelShape &s) {
  const int64_t q_width = s.heads * s.head_dim;
  const int64_t kv_width = s.kv_heads * s.head_dim;
  std::vector<PlannedTensor> t;
  t.push_back({"token_embd.weight", {s.hidden, s.vocab}, {}});
  for (int64_t i = 0; i < s.layers; ++i) {
    if (s.hybrid) {
      plan_hybrid_layer(s, i, t);
      continue;
    }
    const std::string p = "blk." + std::to_string(i) + ".";
    t.push_back({p + "attn_norm.weight", {s.hidden}, kNorm});
    t.push_back({p + "attn_q.weight", {s.hidden, q_width}, {}});
    t.push_back({p + "attn_k.weight", {s.hidden, kv_width}, {}});
    t.push_back({p + "attn_v.weight", {s.hidden, kv_width}, {}});
    t.push_back({p + "attn_output.weight", {q_width, s.hidden}, {}});
    t.push_back({p + "attn_q_norm.weight", {s.head_dim}, kNorm});
    t.push_back({p + "attn_k_norm.weight", {s.head_dim}, kNorm});
    t.push_back({p + "ffn_norm.weight", {s.hidden}, kNorm});
    t.push_back({p + "ffn_gate.weight", {s.hidden, s.ffn}, {}});
    t.push_back({p + "ffn_up.weight", {s.hidden, s.ffn}, {}});
    t.push_back({p + "ffn_down.weight", {s.ffn, s.hidden}, {}});
  }
  if (s.mtp != MtpKind::none)
    plan_mtp_layer(s, t);
  t.push_back({"output_norm.weight", {s.hidden}, kNorm});
  if (!s.tied)
    t.push_back({"output.weight", {s.hidden, s.vocab}, {}});
  return t;
}

void set_hyperparameters(gguf::Writer &w, const ModelShape &s, GgmlType type,
                         const std::string &name) {
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  const std::string arch = s.hybrid ? "qwen35" : "qwen3";
  w.set_string("general.architecture", arch);
  w.set_string("general.name", name);
  const int64_t mtp_layers = s.mtp == MtpKind::none ? 0 : 1;
  w.set_u32(arch + ".block_count", u32(s.layers + mtp_layers));
  w.set_u32(arch + ".context_length", u32(s.context));
  w.set_u32(arch + ".embedding_length", u32(s.hidden));
  w.set_u32(arch + ".feed_forward_length", u32(s.ffn));
  w.set_u32(arch + ".attention.head_count", u32(s.heads));
  w.set_u32(arch + ".attention.head_count_kv", u32(s.kv_heads));
  w.set_u32(arch + ".attention.key_length", u32(s.head_dim));
  w.set_u32(arch + ".attention.value_length", u32(s.head_dim));
  w.set_f32(arch + ".rope.freq_base", s.hybrid ? kHybridRopeFreqBase : kRopeFreqBase);
  w.set_f32(arch + ".attention.layer_norm_rms_epsilon", kRmsEps);
  if (const auto &y = s.hybrid) {
    w.set_u32("qwen35.rope.dimension_count", u32(y->rope_dims));
    w.set_array("qwen35.rope.dimension_sections",
                gguf::Array{gguf::ValueType::INT32,
                            {gguf::Value::i32(11), gguf::Value::i32(11), gguf::Value::i32(10),
                             gguf::Value::i32(0)}});
    w.set_u32("qwen35.ssm.conv_kernel", u32(y->conv_kernel));
    w.set_u32("qwen35.ssm.inner_size", u32(y->v_heads * y->head_dim));
    w.set_u32("qwen35.ssm.state_size", u32(y->head_dim));
    w.set_u32("qwen35.ssm.time_step_rank", u32(y->v_heads));
    w.set_u32("qwen35.ssm.group_count", u32(y->k_heads));
    w.set_u32("qwen35.full_attention_interval", u32(y->attention_interval));
    if (mtp_layers > 0)
      w.set_u32("qwen35.nextn_predict_layers", u32(mtp_layers));
  }
  w.set_u32("general.file_type", file_type_of(type));
}

struct Options {
  ModelShape shape;
  GgmlType type = GgmlType::Q1_0;
  std::string vocab_path;
  std::string output;
  std::string name;
  uint64_t seed = 1;
  float layer_gain = 1.0f;            // on the matrices that write into the residual stream
  std::optional<std::string> head_of; // the model whose embedding, head and norm are padded in
  std::optional<PerturbSpec> perturb; // --perturb-of: a copy, not a new model
};

const char *kSynopsis =
    "make-model --vocab VOCAB.gguf -o OUT.gguf [--preset 1.7b|4b|8b|27b|tiny|tiny-q35]\n"
    "                              [shape options] [--type TYPE] [--seed N]\n"
    "                              [--layer-gain G] [--head-of MODEL.gguf] [--mtp random|agree]\n"
    "       make-model --perturb-of MODEL.gguf --perturb P -o OUT.gguf [--seed N]";
const char *kAbout =
    "Writes a Qwen3 GGUF with random weights of the given shape (27b and tiny-q35:\n"
    "a qwen35 hybrid of gated DeltaNet and gated attention layers). Without --preset,\n"
    "--hidden --layers --heads --kv-heads --ffn are required; with one, they override it.\n"
    "Every matrix (embedding and LM head included) is in --type; norms are f32 in\n"
    "[0.8, 1.2). The tokenizer.* keys are copied from --vocab and the token list is\n"
    "padded with [PAD{id}] (or cut, keeping control tokens) to --vocab-size rows.\n"
    "With --perturb-of, writes a copy of MODEL in which a fraction P of the blocks of\n"
    "every quantized matrix is replaced by other blocks of the same matrix: a draft\n"
    "that agrees with MODEL less as P grows (docs/speculative.md).\n"
    "--layer-gain and --head-of make drafts of known agreement across shapes: two\n"
    "models with quiet layers and one shared (zero-padded) embedding and LM head\n"
    "choose the same next tokens; the gain sets how far the layers move them apart.\n"
    "--mtp adds a qwen35 model's multi-token-prediction layer: random, or one that\n"
    "agrees with the trunk as far as --layer-gain lets it (docs/speculative.md).";

Options parse(const std::vector<std::string> &args, bool &help) {
  CommandLine command_line("make-model", kSynopsis, kAbout);
  // clang-format off
  command_line.add_options()
    ("vocab", po::value<std::string>()->value_name("VOCAB.gguf"), "GGUF file whose tokenizer.* keys are copied (required)")
    ("output,o", po::value<std::string>()->value_name("OUT.gguf"), "output GGUF path (required)")
    ("preset", po::value<std::string>()->value_name("NAME"), "1.7b, 4b, 8b, 27b (real Bonsai shapes; 27b is qwen35), tiny or tiny-q35")
    ("type", po::value<std::string>()->value_name("TYPE")->default_value("q1_0"), "matrix encoding: q1_0, q2_0, q2_0_g64, pq2_0, ptq1_0, tq1_0 or tq2_0")
    ("hidden", po::value<int64_t>()->value_name("N"), "embedding length")
    ("layers", po::value<int64_t>()->value_name("N"), "block count")
    ("heads", po::value<int64_t>()->value_name("N"), "query heads")
    ("kv-heads", po::value<int64_t>()->value_name("N"), "key/value heads")
    ("ffn", po::value<int64_t>()->value_name("N"), "feed-forward length")
    ("head-dim", po::value<int64_t>()->value_name("N"), "head dimension (default 128)")
    ("vocab-size", po::value<int64_t>()->value_name("N"), "rows of the embedding (default 151936)")
    ("context-length", po::value<int64_t>()->value_name("N"), "qwen3.context_length (default 40960)")
    ("tied", po::bool_switch(), "LM head shares token_embd (1.7b and 4b default)")
    ("untied", po::bool_switch(), "separate output.weight (8b, tiny and custom default)")
    ("seed", po::value<uint64_t>()->value_name("N")->default_value(1), "random seed")
    ("name", po::value<std::string>()->value_name("TEXT"), "general.name")
    ("layer-gain", po::value<double>()->value_name("G"), "scale attn_output, ffn_down and ssm_out by G in [0, 1000] (default 1; near 0 the layers barely change the residual stream)")
    ("head-of", po::value<std::string>()->value_name("MODEL.gguf"), "take MODEL's token embedding, LM head and output norm (same vocabulary and --type, or a q1_0 MODEL for a q2_0 model; narrower), zero-padded to --hidden")
    ("mtp", po::value<std::string>()->value_name("KIND"), "qwen35: add an MTP layer, 'random' or 'agree' (it proposes what the trunk would choose if its layers wrote nothing)")
    ("perturb-of", po::value<std::string>()->value_name("MODEL.gguf"), "copy this model with some blocks replaced (with --perturb)")
    ("perturb", po::value<double>()->value_name("P"), "fraction of each matrix's blocks replaced, in [0, 1]");
  // clang-format on
  Options o;
  help = !command_line.parse(args);
  if (help)
    return o;
  command_line.no_more_words();
  const po::variables_map &vm = command_line.values();
  if (vm.count("perturb-of") || vm.count("perturb")) {
    require(vm.count("perturb-of") && vm.count("perturb"),
            "--perturb-of MODEL.gguf and --perturb P go together");
    require(vm.count("output"), "-o OUT.gguf is required");
    for (const char *key :
         {"vocab", "preset", "hidden", "layers", "heads", "kv-heads", "ffn", "head-dim",
          "vocab-size", "context-length", "name", "layer-gain", "head-of", "mtp"})
      require(!vm.count(key), std::string("--") + key + " does not apply to --perturb-of");
    o.perturb = PerturbSpec{vm["perturb-of"].as<std::string>(), vm["output"].as<std::string>(),
                            vm["perturb"].as<double>(), vm["seed"].as<uint64_t>()};
    require(o.perturb->fraction >= 0.0 && o.perturb->fraction <= 1.0,
            "--perturb must be in [0, 1]");
    require(o.perturb->input != o.perturb->output, "the output must be another file");
    return o;
  }
  require(vm.count("vocab"), "--vocab VOCAB.gguf is required (e.g. tests/data/qwen3-vocab.gguf)");
  require(vm.count("output"), "-o OUT.gguf is required");
  o.vocab_path = vm["vocab"].as<std::string>();
  o.output = vm["output"].as<std::string>();
  o.seed = vm["seed"].as<uint64_t>();

  const std::string type = vm["type"].as<std::string>();
  const auto parsed_type = type_from_name(type);
  require(parsed_type && (*parsed_type == GgmlType::Q1_0 || traits_of(*parsed_type).ternary),
          "--type must be q1_0, q2_0, q2_0_g64, pq2_0, ptq1_0, tq1_0 or tq2_0, not '" + type + "'");
  o.type = *parsed_type;

  std::string shape_name = "custom";
  if (vm.count("preset")) {
    shape_name = vm["preset"].as<std::string>();
    const auto it = presets().find(shape_name);
    require(it != presets().end(),
            "unknown --preset '" + shape_name + "' (known: 1.7b, 4b, 8b, 27b, tiny, tiny-q35)");
    o.shape = it->second;
  } else {
    for (const char *key : {"hidden", "layers", "heads", "kv-heads", "ffn"})
      require(vm.count(key), std::string("--") + key + " is required without --preset");
  }
  const std::pair<const char *, int64_t *> dims[] = {
      {"hidden", &o.shape.hidden},    {"layers", &o.shape.layers},
      {"heads", &o.shape.heads},      {"kv-heads", &o.shape.kv_heads},
      {"ffn", &o.shape.ffn},          {"head-dim", &o.shape.head_dim},
      {"vocab-size", &o.shape.vocab}, {"context-length", &o.shape.context}};
  for (const auto &[key, field] : dims)
    if (vm.count(key))
      *field = vm[key].as<int64_t>();
  const bool tied = vm["tied"].as<bool>();
  const bool untied = vm["untied"].as<bool>();
  require(!(tied && untied), "--tied and --untied exclude each other");
  if (tied || untied)
    o.shape.tied = tied;
  if (vm.count("mtp")) {
    const std::string kind = vm["mtp"].as<std::string>();
    require(kind == "random" || kind == "agree",
            "--mtp must be 'random' or 'agree', not '" + kind + "'");
    require(o.shape.hybrid.has_value(),
            "--mtp adds a qwen35 layer; the shape is qwen3 (use --preset 27b or tiny-q35)");
    o.shape.mtp = kind == "random" ? MtpKind::random : MtpKind::agree;
  }
  validate(o.shape, o.type);
  if (vm.count("layer-gain")) {
    const double gain = vm["layer-gain"].as<double>();
    require(gain >= 0.0 && gain <= kMaxRandomGain, "--layer-gain must be in [0, 1000]");
    static_assert(kMaxRandomGain == 1000.0f, "the message above names the bound");
    o.layer_gain = static_cast<float>(gain);
  }
  if (vm.count("head-of"))
    o.head_of = vm["head-of"].as<std::string>();
  o.name = vm.count("name") ? vm["name"].as<std::string>()
                            : "bonsai-" + shape_name + "-" + type + "-synthetic";
  return o;
}

// The matrices whose outputs are added to the residual stream: scaling them
// scales each layer's whole contribution.
bool writes_residual(const std::string &name) {
  for (const char *suffix : {".attn_output.weight", ".ffn_down.weight", ".ssm_out.weight"})
    if (name.ends_with(suffix))
      return true;
  return false;
}

// Q8_0 rows of `cols` values (whole rows in `out`): row r is exactly 1 at
// column r (a block with d = 1 and that one q = 1) and 0 elsewhere, so
// y = W x is x's first rows() values. 8 bits: half of f16's bytes.
void fill_left_identity(int64_t cols, std::span<uint8_t> out) {
  std::fill(out.begin(), out.end(), uint8_t{0});
  const size_t row_bytes = static_cast<size_t>(cols / kQ8BlockSize) * sizeof(BlockQ8_0);
  for (size_t r = 0; (r + 1) * row_bytes <= out.size(); ++r) {
    BlockQ8_0 block{};
    block.d = 0x3C00; // 1.0 in f16
    block.qs[r % kQ8BlockSize] = 1;
    std::memcpy(out.data() + r * row_bytes + (r / kQ8BlockSize) * sizeof block, &block,
                sizeof block);
  }
}

// The borrowed tensor of that name, or nullptr.
std::vector<uint8_t> *borrowed(BorrowedHead *head, const std::string &name) {
  if (head == nullptr)
    return nullptr;
  if (name == "token_embd.weight")
    return &head->token_embd;
  if (name == "output.weight")
    return &head->output;
  if (name == "output_norm.weight")
    return &head->output_norm;
  return nullptr;
}

void add_weights(gguf::Writer &w, const Options &o, BorrowedHead *head, int64_t &n_params) {
  for (PlannedTensor &t : plan_tensors(o.shape)) {
    int64_t elements = 1;
    for (int64_t d : t.dims)
      elements *= d;
    n_params += elements;
    const uint64_t seed = tensor_seed(o.seed, t.name);
    if (std::vector<uint8_t> *bytes = borrowed(head, t.name)) {
      w.add_tensor(t.name, t.floats ? GgmlType::F32 : o.type, std::move(t.dims), std::move(*bytes));
    } else if (t.fixed == FixedValues::ones) {
      w.add_tensor_filled(t.name, GgmlType::F32, std::move(t.dims), [](std::span<uint8_t> out) {
        const float one = 1.0f;
        for (size_t i = 0; i + sizeof one <= out.size(); i += sizeof one)
          std::memcpy(out.data() + i, &one, sizeof one);
      });
    } else if (t.fixed == FixedValues::left_identity) {
      const int64_t cols = t.dims[0];
      w.add_tensor_filled(t.name, GgmlType::Q8_0, std::move(t.dims),
                          [cols](std::span<uint8_t> out) { fill_left_identity(cols, out); });
    } else if (t.floats) {
      const RandomFloatSpec spec{seed, t.floats->low, t.floats->high};
      w.add_tensor_filled(t.name, GgmlType::F32, std::move(t.dims),
                          [spec](std::span<uint8_t> out) { fill_random_floats(spec, out); });
    } else {
      const float gain = t.fixed == FixedValues::zero_gain ? 0.0f
                         : writes_residual(t.name)         ? o.layer_gain
                                                           : 1.0f;
      const RandomMatrixSpec spec{o.type, t.dims[0], seed, gain};
      w.add_tensor_filled(t.name, o.type, std::move(t.dims),
                          [spec](std::span<uint8_t> out) { fill_random_matrix(spec, out); });
    }
  }
}

int run_make_model(const std::vector<std::string> &args) {
  bool help = false;
  const Options o = parse(args, help);
  if (help)
    return kExitOk;
  gguf::Writer::check_target(o.output); // before the work, not after it
  if (o.perturb) {
    write_perturbed_copy(*o.perturb);
    return kExitOk;
  }
  const auto start = std::chrono::steady_clock::now();

  const gguf::File vocab = gguf::File::open(o.vocab_path);
  const FittedVocab fitted = fit_vocabulary(vocab, o.shape.vocab);

  std::optional<BorrowedHead> head;
  if (o.head_of)
    head = borrow_head({*o.head_of, o.type, o.shape.hidden, o.shape.vocab, o.shape.tied});

  gguf::Writer w;
  set_hyperparameters(w, o.shape, o.type, o.name);
  for (const auto &[key, value] : fitted.keys)
    w.set(key, value);
  int64_t n_params = 0;
  add_weights(w, o, head ? &*head : nullptr, n_params);
  w.write(o.output);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto bytes = std::filesystem::file_size(o.output);
  const ModelShape &s = o.shape;
  std::printf("wrote %s\n", o.output.c_str());
  if (const auto &y = s.hybrid)
    std::printf("  qwen35: gated DeltaNet with %lld q/k and %lld value heads of %lld, conv %lld; "
                "gated attention every %lld layers, %lld rotary dims\n",
                static_cast<long long>(y->k_heads), static_cast<long long>(y->v_heads),
                static_cast<long long>(y->head_dim), static_cast<long long>(y->conv_kernel),
                static_cast<long long>(y->attention_interval),
                static_cast<long long>(y->rope_dims));
  std::printf("  %s: hidden %lld, layers %lld, heads %lld/%lld (head dim %lld), ffn %lld, "
              "context %lld, LM head %s\n",
              s.hybrid ? "attention" : "qwen3", static_cast<long long>(s.hidden),
              static_cast<long long>(s.layers), static_cast<long long>(s.heads),
              static_cast<long long>(s.kv_heads), static_cast<long long>(s.head_dim),
              static_cast<long long>(s.ffn), static_cast<long long>(s.context),
              s.tied ? "tied" : "untied");
  std::printf("  vocab: %lld rows (%lld tokens in %s", static_cast<long long>(s.vocab),
              static_cast<long long>(fitted.source_tokens), o.vocab_path.c_str());
  if (fitted.padded_tokens > 0)
    std::printf(", %lld padding", static_cast<long long>(fitted.padded_tokens));
  if (fitted.dropped_tokens > 0)
    std::printf(
        ", %lld cut, %lld of %lld merges kept", static_cast<long long>(fitted.dropped_tokens),
        static_cast<long long>(fitted.kept_merges), static_cast<long long>(fitted.source_merges));
  std::printf(")\n");
  for (const std::string &key : fitted.dropped_keys)
    std::printf("  note: %s dropped (its token was cut)\n", key.c_str());
  std::printf("  weights: %lld parameters, matrices %s, norms f32, seed %llu\n",
              static_cast<long long>(n_params),
              std::string(type_name(static_cast<uint32_t>(o.type))).c_str(),
              static_cast<unsigned long long>(o.seed));
  if (s.mtp != MtpKind::none)
    std::printf("  MTP layer: blk.%lld, %s\n", static_cast<long long>(s.layers),
                s.mtp == MtpKind::random
                    ? "random"
                    : "agreeing (eh_proj, q8_0, passes the embedding through, its attention and "
                      "MLP write nothing: it proposes what the trunk would with silent layers)");
  if (head)
    std::printf("  head: token embedding, LM head and output norm of %s (width %lld, "
                "zero-padded to %lld)\n",
                o.head_of->c_str(), static_cast<long long>(head->source_hidden),
                static_cast<long long>(s.hidden));
  if (o.layer_gain != 1.0f)
    std::printf("  layer gain: attn_output, ffn_down and ssm_out scaled by %g\n",
                static_cast<double>(o.layer_gain));
  std::printf("  size: %llu bytes (%.1f MiB) in %.2f s\n", static_cast<unsigned long long>(bytes),
              static_cast<double>(bytes) / (1024.0 * 1024.0), seconds);
  return 0;
}

const bool registered = register_command(
    {"make-model", "write a synthetic Qwen3 model with random Q1_0/Q2_0 weights", &run_make_model});

} // namespace
} // namespace bonsai::tools
