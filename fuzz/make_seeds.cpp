// Writes the committed seed corpora of the fuzz targets, small on purpose
// (the golden models are megabytes): fuzz_make_seeds <repo>/fuzz/corpus
//  model/     tiny valid Qwen3 (and one qwen35) files (hidden 128, 1 layer, a 405-token slice
//             of the Qwen3 vocabulary) and copies cut at each section boundary
//  gguf/      every metadata value type, every tensor type, edge headers, cuts
//  tokenizer/ text (first byte even) and id lists (first byte odd) in the
//             layout fuzz_tokenizer.cpp reads
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"

namespace fs = std::filesystem;
using namespace bonsai;
using gguf::Value;
using gguf::ValueType;

namespace {

void save(const fs::path &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out)
    throw Error(path.string() + ": cannot write");
  std::printf("%8zu  %s\n", bytes.size(), path.c_str());
}

// Deterministic filler so the corpus is reproducible.
struct Lcg {
  uint32_t state = 12345;
  uint8_t next() {
    state = state * 1664525u + 1013904223u;
    return static_cast<uint8_t>(state >> 24);
  }
};

// Tensor bytes for `dims` of `type`: floats near 1 for float types, blocks
// with a small f16 scale and random codes for block types.
std::vector<uint8_t> tensor_bytes(GgmlType type, const std::vector<int64_t> &dims, Lcg &rng) {
  int64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i)
    rows *= dims[i];
  const int64_t n = dims[0] * rows;
  std::vector<float> values(static_cast<size_t>(n));
  for (float &v : values)
    v = type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16
            ? 0.9f + rng.next() / 1280.0f
            : (rng.next() - 128) / 1024.0f;
  std::vector<uint8_t> bytes(row_bytes(type, dims[0]) * static_cast<size_t>(rows));
  quantize_row(type, values.data(), bytes.data(), n);
  return bytes;
}

// Encoded size of a metadata value's payload (for locating section ends).
uint64_t payload_size(const Value &v) {
  switch (v.type) {
  case ValueType::UINT8:
  case ValueType::INT8:
  case ValueType::BOOL:
    return 1;
  case ValueType::UINT16:
  case ValueType::INT16:
    return 2;
  case ValueType::UINT32:
  case ValueType::INT32:
  case ValueType::FLOAT32:
    return 4;
  case ValueType::UINT64:
  case ValueType::INT64:
  case ValueType::FLOAT64:
    return 8;
  case ValueType::STRING:
    return 8 + std::get<std::string>(v.data).size();
  case ValueType::ARRAY: {
    uint64_t n = 12;
    for (const Value &item : std::get<gguf::Array>(v.data).items)
      n += payload_size(item);
    return n;
  }
  }
  return 0;
}

// Offsets where the header, the metadata and the tensor table end.
struct Sections {
  uint64_t header_end = 24, metadata_end = 0, table_end = 0, data_start = 0;
};

Sections sections_of(const std::vector<uint8_t> &image) {
  const gguf::File f = gguf::File::parse(image, "seed");
  Sections s;
  s.metadata_end = s.header_end;
  for (const auto &[key, value] : f.metadata())
    s.metadata_end += 8 + key.size() + 4 + payload_size(value);
  s.table_end = s.metadata_end;
  for (const gguf::TensorInfo &t : f.tensors())
    s.table_end += 8 + t.name.size() + 4 + 8 * t.dims.size() + 4 + 8;
  s.data_start = f.data_offset();
  return s;
}

// Cuts `image` at every section boundary and inside each section.
void save_cuts(const fs::path &dir, const std::string &stem, const std::vector<uint8_t> &image) {
  const Sections s = sections_of(image);
  const std::vector<std::pair<const char *, uint64_t>> cuts = {
      {"in-header", 12},
      {"header", s.header_end},
      {"in-metadata", (s.header_end + s.metadata_end) / 2},
      {"metadata", s.metadata_end},
      {"in-table", (s.metadata_end + s.table_end) / 2},
      {"table", s.table_end},
      {"in-data", (s.data_start + image.size()) / 2},
      {"last-byte", image.size() - 1},
  };
  for (const auto &[what, at] : cuts)
    save(dir / (stem + ".cut-" + what + ".gguf"),
         std::vector<uint8_t>(image.begin(), image.begin() + static_cast<std::ptrdiff_t>(at)));
}

// The tokenizer of the tiny models: the first 400 Qwen3 tokens (every byte
// among them), the merges that stay inside them, five added tokens and
// padding up to the embedding rows, as real files pad.
void add_tokenizer(gguf::Writer &w, const gguf::File &vocab, int64_t n_rows) {
  constexpr size_t kNormal = 400;
  const auto &all = vocab.at("tokenizer.ggml.tokens").as_array("tokens").items;
  std::vector<Value> tokens(all.begin(), all.begin() + kNormal);
  std::vector<Value> types(kNormal, Value::i32(1));
  std::vector<std::string> kept;
  for (size_t i = 0; i < kNormal; ++i)
    kept.push_back(all[i].as_string("token"));
  const auto known = [&](std::string_view s) {
    for (const std::string &k : kept)
      if (k == s)
        return true;
    return false;
  };
  std::vector<Value> merges;
  for (const Value &m : vocab.at("tokenizer.ggml.merges").as_array("merges").items) {
    const std::string &line = m.as_string("merge");
    const size_t space = line.find(' ');
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    if (known(left) && known(right) && known(left + right))
      merges.push_back(m);
  }
  const std::pair<const char *, int32_t> added[] = {{"<|endoftext|>", 3},
                                                    {"<|im_start|>", 3},
                                                    {"<|im_end|>", 3},
                                                    {"<think>", 4},
                                                    {"</think>", 4}};
  for (const auto &[text, type] : added) {
    tokens.push_back(Value::string(text));
    types.push_back(Value::i32(type));
  }
  for (auto id = static_cast<int64_t>(tokens.size()); id < n_rows; ++id) {
    tokens.push_back(Value::string("[PAD" + std::to_string(id) + "]"));
    types.push_back(Value::i32(5));
  }
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "qwen2");
  w.set_array("tokenizer.ggml.tokens", {ValueType::STRING, std::move(tokens)});
  w.set_array("tokenizer.ggml.token_type", {ValueType::INT32, std::move(types)});
  w.set_array("tokenizer.ggml.merges", {ValueType::STRING, std::move(merges)});
  w.set_u32("tokenizer.ggml.eos_token_id", kNormal + 2);
  w.set_u32("tokenizer.ggml.padding_token_id", kNormal);
  w.set_string("tokenizer.chat_template",
               "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
               "{% endfor %}");
}

struct TinyModel {
  GgmlType matrix = GgmlType::Q1_0;
  GgmlType norm = GgmlType::F32;
  int64_t embd = 128, heads = 2, kv_heads = 1, head_dim = 64, ff = 128, rows = 416;
  bool tied = false;
  bool key_length = true; // write qwen3.attention.key_length
};

std::vector<uint8_t> tiny_model(const TinyModel &m, const gguf::File *vocab) {
  gguf::Writer w;
  Lcg rng;
  w.set_string("general.architecture", "qwen3");
  w.set_string("general.name", "fuzz-seed");
  w.set_u32("qwen3.block_count", 1);
  w.set_u32("qwen3.context_length", 256);
  w.set_u32("qwen3.embedding_length", static_cast<uint32_t>(m.embd));
  w.set_u32("qwen3.feed_forward_length", static_cast<uint32_t>(m.ff));
  w.set_u32("qwen3.attention.head_count", static_cast<uint32_t>(m.heads));
  w.set_u32("qwen3.attention.head_count_kv", static_cast<uint32_t>(m.kv_heads));
  if (m.key_length) {
    w.set_u32("qwen3.attention.key_length", static_cast<uint32_t>(m.head_dim));
    w.set_u32("qwen3.attention.value_length", static_cast<uint32_t>(m.head_dim));
  }
  w.set_f32("qwen3.rope.freq_base", 1e6f);
  w.set_f32("qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
  if (vocab)
    add_tokenizer(w, *vocab, m.rows);
  const auto add = [&](const std::string &name, GgmlType type, std::vector<int64_t> dims) {
    w.add_tensor(name, type, dims, tensor_bytes(type, dims, rng));
  };
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  add("token_embd.weight", m.matrix, {m.embd, m.rows});
  add("blk.0.attn_norm.weight", m.norm, {m.embd});
  add("blk.0.attn_q.weight", m.matrix, {m.embd, q});
  add("blk.0.attn_k.weight", m.matrix, {m.embd, kv});
  add("blk.0.attn_v.weight", m.matrix, {m.embd, kv});
  add("blk.0.attn_q_norm.weight", m.norm, {m.head_dim});
  add("blk.0.attn_k_norm.weight", m.norm, {m.head_dim});
  add("blk.0.attn_output.weight", m.matrix, {q, m.embd});
  add("blk.0.ffn_norm.weight", m.norm, {m.embd});
  add("blk.0.ffn_gate.weight", m.matrix, {m.embd, m.ff});
  add("blk.0.ffn_up.weight", m.matrix, {m.embd, m.ff});
  add("blk.0.ffn_down.weight", m.matrix, {m.ff, m.embd});
  add("output_norm.weight", m.norm, {m.embd});
  if (!m.tied)
    add("output.weight", m.matrix, {m.embd, m.rows});
  return w.serialize();
}

// A qwen35 file (Bonsai-27B's architecture) of the same size: a gated
// DeltaNet layer (2 q/k and 4 value heads of 32, conv 4) and a gated
// attention layer (full_attention_interval 2), then an MTP layer the main
// pass never loads.
std::vector<uint8_t> tiny_hybrid_model(const gguf::File &vocab) {
  gguf::Writer w;
  Lcg rng;
  const int64_t embd = 128, heads = 2, kv_heads = 1, head_dim = 64, ff = 128, rows = 416;
  const int64_t d = 32, k_heads = 2, v_heads = 4, conv = 4;
  const int64_t key_dim = k_heads * d, value_dim = v_heads * d, conv_dim = 2 * key_dim + value_dim;
  w.set_string("general.architecture", "qwen35");
  w.set_string("general.name", "fuzz-seed-qwen35");
  w.set_u32("qwen35.block_count", 3);
  w.set_u32("qwen35.nextn_predict_layers", 1);
  w.set_u32("qwen35.context_length", 256);
  w.set_u32("qwen35.embedding_length", embd);
  w.set_u32("qwen35.feed_forward_length", ff);
  w.set_u32("qwen35.attention.head_count", heads);
  w.set_u32("qwen35.attention.head_count_kv", kv_heads);
  w.set_u32("qwen35.attention.key_length", head_dim);
  w.set_u32("qwen35.attention.value_length", head_dim);
  w.set_u32("qwen35.rope.dimension_count", 16);
  w.set_array("qwen35.rope.dimension_sections",
              {ValueType::INT32, {Value::i32(11), Value::i32(11), Value::i32(10), Value::i32(0)}});
  w.set_f32("qwen35.rope.freq_base", 1e7f);
  w.set_f32("qwen35.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_u32("qwen35.ssm.conv_kernel", conv);
  w.set_u32("qwen35.ssm.inner_size", value_dim);
  w.set_u32("qwen35.ssm.state_size", d);
  w.set_u32("qwen35.ssm.time_step_rank", v_heads);
  w.set_u32("qwen35.ssm.group_count", k_heads);
  w.set_u32("qwen35.full_attention_interval", 2);
  add_tokenizer(w, vocab, rows);
  const auto add = [&](const std::string &name, GgmlType type, std::vector<int64_t> dims) {
    w.add_tensor(name, type, dims, tensor_bytes(type, dims, rng));
  };
  const GgmlType q1 = GgmlType::Q1_0, f32 = GgmlType::F32;
  add("token_embd.weight", q1, {embd, rows});
  for (const char *p : {"blk.0.", "blk.1."}) {
    const std::string b = p;
    add(b + "attn_norm.weight", f32, {embd});
    add(b + "post_attention_norm.weight", f32, {embd});
    add(b + "ffn_gate.weight", q1, {embd, ff});
    add(b + "ffn_up.weight", q1, {embd, ff});
    add(b + "ffn_down.weight", q1, {ff, embd});
  }
  add("blk.0.attn_qkv.weight", q1, {embd, conv_dim});
  add("blk.0.attn_gate.weight", q1, {embd, value_dim});
  add("blk.0.ssm_conv1d.weight", f32, {conv, conv_dim});
  add("blk.0.ssm_dt.bias", f32, {v_heads});
  add("blk.0.ssm_a", f32, {v_heads});
  add("blk.0.ssm_beta.weight", GgmlType::F16, {embd, v_heads});
  add("blk.0.ssm_alpha.weight", GgmlType::F16, {embd, v_heads});
  add("blk.0.ssm_norm.weight", f32, {d});
  add("blk.0.ssm_out.weight", q1, {value_dim, embd});
  add("blk.1.attn_q.weight", q1, {embd, 2 * heads * head_dim});
  add("blk.1.attn_k.weight", q1, {embd, kv_heads * head_dim});
  add("blk.1.attn_v.weight", q1, {embd, kv_heads * head_dim});
  add("blk.1.attn_output.weight", q1, {heads * head_dim, embd});
  add("blk.1.attn_q_norm.weight", f32, {head_dim});
  add("blk.1.attn_k_norm.weight", f32, {head_dim});
  add("blk.2.nextn.enorm.weight", f32, {embd});
  add("output_norm.weight", f32, {embd});
  return w.serialize();
}

// One metadata entry of every value type (arrays of each, nested arrays) and
// one tensor of every type, general.alignment 64.
std::vector<uint8_t> all_types_file() {
  gguf::Writer w;
  Lcg rng;
  w.set_u32("general.alignment", 64);
  w.set_string("general.architecture", "test");
  w.set("u8", Value::u8(200));
  w.set("i8", Value::i8(-100));
  w.set("u16", Value::u16(60000));
  w.set("i16", Value::i16(-30000));
  w.set("u32", Value::u32(4000000000u));
  w.set("i32", Value::i32(-2000000000));
  w.set("u64", Value::u64(18000000000000000000ull));
  w.set("i64", Value::i64(-9000000000000000000ll));
  w.set("f32", Value::f32(1.5f));
  w.set("f64", Value::f64(-2.25));
  w.set("bool", Value::boolean(true));
  w.set("string", Value::string("h\xC3\xA9llo"));
  w.set_array("a.u8", {ValueType::UINT8, {Value::u8(1), Value::u8(2)}});
  w.set_array("a.i32", {ValueType::INT32, {Value::i32(-1), Value::i32(7)}});
  w.set_array("a.f32", {ValueType::FLOAT32, {Value::f32(0.5f)}});
  w.set_array("a.bool", {ValueType::BOOL, {Value::boolean(false), Value::boolean(true)}});
  w.set_array("a.string", {ValueType::STRING, {Value::string("a"), Value::string("")}});
  w.set_array("a.u64", {ValueType::UINT64, {Value::u64(3)}});
  w.set_array("a.f64", {ValueType::FLOAT64, {Value::f64(1e300)}});
  w.set_array("a.empty", {ValueType::INT16, {}});
  w.set_array("a.nested", {ValueType::ARRAY,
                           {Value::array(ValueType::INT8, {Value::i8(1), Value::i8(-1)}),
                            Value::array(ValueType::STRING, {Value::string("x")})}});
  const auto add = [&](const std::string &name, GgmlType type, std::vector<int64_t> dims) {
    w.add_tensor(name, type, dims, tensor_bytes(type, dims, rng));
  };
  add("f32", GgmlType::F32, {4, 2});
  add("f16", GgmlType::F16, {8});
  add("bf16", GgmlType::BF16, {4, 1, 2});
  add("q8_0", GgmlType::Q8_0, {32, 2});
  add("q1_0", GgmlType::Q1_0, {128});
  add("q2_0", GgmlType::Q2_0, {128, 1, 1, 2});
  add("q4_0", GgmlType::Q4_0, {32, 2});
  add("pq2_0", GgmlType::PQ2_0, {128});
  add("ptq1_0", GgmlType::PTQ1_0, {128, 2});
  add("tq1_0", GgmlType::TQ1_0, {256});
  add("tq2_0", GgmlType::TQ2_0, {256});
  w.add_tensor("empty", GgmlType::F32, {0, 3}, std::vector<uint8_t>{});
  return w.serialize();
}

std::vector<uint8_t> bare_header(uint32_t version) {
  std::vector<uint8_t> b(24, 0);
  std::memcpy(b.data(), "GGUF", 4);
  std::memcpy(b.data() + 4, &version, 4);
  return b;
}

std::vector<uint8_t> tokenizer_seed(uint8_t mode, std::string_view body) {
  std::vector<uint8_t> b{mode};
  b.insert(b.end(), body.begin(), body.end());
  return b;
}

std::vector<uint8_t> id_seed(const std::vector<uint32_t> &ids) {
  std::vector<uint8_t> b{1};
  for (uint32_t id : ids) {
    const size_t at = b.size();
    b.resize(at + 4);
    std::memcpy(b.data() + at, &id, 4);
  }
  return b;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_make_seeds <corpus folder> <qwen3-vocab.gguf>\n");
    return 2;
  }
  try {
    const fs::path root = argv[1];
    const gguf::File vocab = gguf::File::open(argv[2]);
    for (const char *sub : {"model", "gguf", "tokenizer"})
      fs::create_directories(root / sub);

    const auto q1 = tiny_model({}, &vocab);
    save(root / "model" / "q1.gguf", q1);
    save(root / "model" / "q1-tied.gguf", tiny_model({.tied = true}, &vocab));
    save(root / "model" / "q2-f16norm.gguf",
         tiny_model({.matrix = GgmlType::Q2_0, .norm = GgmlType::F16}, &vocab));
    save(root / "model" / "f32-tiny-no-tokenizer.gguf", tiny_model({.matrix = GgmlType::F32,
                                                                    .embd = 8,
                                                                    .heads = 2,
                                                                    .kv_heads = 1,
                                                                    .head_dim = 4,
                                                                    .ff = 16,
                                                                    .rows = 16,
                                                                    .key_length = false},
                                                                   nullptr));
    save_cuts(root / "model", "q1", q1);
    // Every other encoding of Bonsai weights (TQ blocks are 256 wide).
    save(root / "model" / "q2g64.gguf", tiny_model({.matrix = GgmlType::Q2_0_G64}, &vocab));
    save(root / "model" / "pq2.gguf", tiny_model({.matrix = GgmlType::PQ2_0}, &vocab));
    save(root / "model" / "ptq1.gguf", tiny_model({.matrix = GgmlType::PTQ1_0}, &vocab));
    for (const auto &[name, type] :
         {std::pair{"tq1.gguf", GgmlType::TQ1_0}, std::pair{"tq2.gguf", GgmlType::TQ2_0}})
      save(root / "model" / name,
           tiny_model({.matrix = type, .embd = 256, .head_dim = 128, .ff = 256}, &vocab));

    const auto hybrid = tiny_hybrid_model(vocab);
    save(root / "model" / "qwen35.gguf", hybrid);
    save_cuts(root / "model", "qwen35", hybrid);

    const auto types = all_types_file();
    save(root / "gguf" / "all-types.gguf", types);
    save_cuts(root / "gguf", "all-types", types);
    save(root / "gguf" / "empty-v3.gguf", bare_header(3));
    save(root / "gguf" / "empty-v2.gguf", bare_header(2));
    save(root / "gguf" / "q1-tied.gguf", tiny_model({.tied = true}, &vocab));

    const fs::path tok = root / "tokenizer";
    save(tok / "ascii", tokenizer_seed(0, "Hello world! How are you? I'm fine, don't worry."));
    save(tok / "spaces", tokenizer_seed(0, "  two\n\n\tthree   spaces\r\n 123456789 3.14 x=y+1"));
    save(tok / "latin-nfc",
         tokenizer_seed(0, "caf\xC3\xA9 e\xCC\x81t\xC3\xA9 na\xC3\xAFve A\xCC\x8A"));
    save(tok / "cjk",
         tokenizer_seed(0, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xE4\xB8\xAD\xE6\x96\x87 "
                           "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4"));
    save(tok / "emoji", tokenizer_seed(0, "ok \xF0\x9F\x99\x82\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD!"));
    save(tok / "scripts",
         tokenizer_seed(0, "\xCE\x95\xCE\xBB\xCE\xBB\xCE\xB7\xCE\xBD\xCE\xB9\xCE\xBA"
                           "\xCE\xAC \xD0\xA0\xD1\x83\xD1\x81 \xD8\xB9\xD8\xB1\xD8\xA8"));
    save(tok / "chatml-special",
         tokenizer_seed(2, "<|im_start|>user\nhi<|im_end|>\n<think>\n</think>"));
    save(tok / "chatml-plain", tokenizer_seed(0, "<|im_start|>user\nhi<|im_end|><tool_call>"));
    save(tok / "invalid-utf8", tokenizer_seed(0, "bad \xFF\xFE and \xC3 and \xED\xA0\x80 end"));
    // Ids: a few words, the added tokens, byte tokens that split characters
    // (0xC3 = id 127, 0xA9 = id 102), and padding-free high ids.
    save(tok / "ids-words", id_seed({9707, 1879, 0, 151643, 151644, 151645, 151667, 151668}));
    save(tok / "ids-split-char", id_seed({127, 102, 127, 127, 102, 102, 8, 127}));
    save(tok / "ids-high", id_seed({151668, 151642, 151000, 256, 255, 188, 189}));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
