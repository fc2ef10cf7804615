// Catalogue rows "a GGUF file that is not a usable Qwen3 model" (docs/errors.md,
// section 3): the golden tiny-q1.gguf rewritten with one thing wrong. Checked
// through `bonsai run` (message, exit code 1) and Engine::open (ModelError).
#include <algorithm>
#include <functional>
#include <span>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/engine.hpp"
#include "errors_support.hpp"

namespace bonsai::errors_test {
namespace {

struct TensorEntry {
  std::string name;
  GgmlType type;
  std::vector<int64_t> dims;
  std::span<const uint8_t> bytes;
};

struct ModelParts {
  std::vector<std::pair<std::string, gguf::Value>> metadata;
  std::vector<TensorEntry> tensors;

  gguf::Value &value(const std::string &key) {
    return std::find_if(metadata.begin(), metadata.end(), [&](auto &kv) { return kv.first == key; })
        ->second;
  }
  TensorEntry &tensor(const std::string &name) {
    return *std::find_if(tensors.begin(), tensors.end(),
                         [&](const TensorEntry &t) { return t.name == name; });
  }
};

const gguf::File &golden_file(const std::string &name) {
  static const gguf::File q1 = gguf::File::open(data_file("tiny-q1.gguf"));
  static const gguf::File q35 = gguf::File::open(data_file("tiny-q35-q1.gguf"));
  return name == "tiny-q35-q1.gguf" ? q35 : q1;
}

// tiny-q1.gguf (hidden 512, 4 layers, 4 heads / 2 KV heads of 128, FFN
// 1536, 2048 embedding rows, 2048 tokens), or the golden file `source`,
// after `edit`.
std::vector<uint8_t> tiny_q1_with(const std::function<void(ModelParts &)> &edit,
                                  const std::string &source = "tiny-q1.gguf") {
  ModelParts parts;
  const gguf::File &file = golden_file(source);
  parts.metadata = file.metadata();
  for (const gguf::TensorInfo &t : file.tensors())
    parts.tensors.push_back({t.name, t.type(), t.dims, {t.data, t.nbytes}});
  edit(parts);
  gguf::Writer writer;
  for (const auto &[key, value] : parts.metadata)
    writer.set(key, value);
  for (const TensorEntry &t : parts.tensors)
    writer.add_tensor_borrowed(t.name, t.type, t.dims, t.bytes);
  return writer.serialize();
}

struct Row {
  const char *name;
  std::function<void(ModelParts &)> edit;
  const char *message;                 // "MODEL" stands for the file's path
  const char *source = "tiny-q1.gguf"; // the golden file edited
};

void drop_tensor(ModelParts &m, const std::string &name) {
  std::erase_if(m.tensors, [&](const TensorEntry &t) { return t.name == name; });
}

// Appends `n` tokens to the tokenizer (types: user-defined).
void add_tokens(ModelParts &m, int n) {
  auto &tokens = std::get<gguf::Array>(m.value("tokenizer.ggml.tokens").data).items;
  auto &types = std::get<gguf::Array>(m.value("tokenizer.ggml.token_type").data).items;
  for (int i = 0; i < n; ++i) {
    tokens.push_back(gguf::Value::string("<extra_" + std::to_string(i) + ">"));
    types.push_back(gguf::Value::i32(4));
  }
}

const Row kRows[] = {
    {"UnsupportedArchitecture",
     [](ModelParts &m) { m.value("general.architecture") = gguf::Value::string("llama"); },
     "MODEL: unsupported architecture 'llama' (bonsai runs qwen3 and qwen35)"},
    {"MissingArchitecture",
     [](ModelParts &m) {
       std::erase_if(m.metadata, [](auto &kv) { return kv.first == "general.architecture"; });
     },
     "MODEL: missing metadata key 'general.architecture'"},
    {"MissingHyperParameter",
     [](ModelParts &m) {
       std::erase_if(m.metadata, [](auto &kv) { return kv.first == "qwen3.block_count"; });
     },
     "MODEL: missing metadata key 'qwen3.block_count'"},
    {"HyperParameterOutOfRange",
     [](ModelParts &m) { m.value("qwen3.block_count") = gguf::Value::u32(0); },
     "MODEL: qwen3.block_count 0 is out of range (1..1024)"},
    {"HyperParameterOfWrongType",
     [](ModelParts &m) { m.value("qwen3.block_count") = gguf::Value::string("four"); },
     "MODEL: metadata key 'qwen3.block_count': expected an integer, found string"},
    {"MissingTensor", [](ModelParts &m) { drop_tensor(m, "blk.0.ffn_up.weight"); },
     "MODEL: missing tensor 'blk.0.ffn_up.weight' (expected shape [512, 1536] [n_embd, n_ff])"},
    {"MissingEmbedding", [](ModelParts &m) { drop_tensor(m, "token_embd.weight"); },
     "MODEL: missing tensor 'token_embd.weight'"},
    {"WrongTensorShape",
     [](ModelParts &m) {
       TensorEntry &q = m.tensor("blk.0.attn_q.weight");
       q.dims = {512, 256};
       q.bytes = q.bytes.first(q.bytes.size() / 2);
     },
     "MODEL: tensor 'blk.0.attn_q.weight' has shape [512, 256], expected [512, 512] [n_embd, "
     "n_head * head_dim]"},
    {"QuantizedNormTensor",
     [](ModelParts &m) {
       TensorEntry &norm = m.tensor("blk.0.attn_norm.weight");
       norm.type = GgmlType::Q1_0;
       norm.bytes = norm.bytes.first(4 * 18); // 512 weights = 4 blocks of 18 bytes
     },
     "MODEL: norm tensor 'blk.0.attn_norm.weight' has type q1_0, expected f32, f16 or bf16"},
    {"VocabularyLargerThanEmbedding", [](ModelParts &m) { add_tokens(m, 10); },
     "MODEL: the tokenizer has 2058 tokens but token_embd.weight has only 2048 rows; every token "
     "needs an embedding row"},
    {"MissingTokenizer",
     [](ModelParts &m) {
       std::erase_if(m.metadata, [](auto &kv) { return kv.first.starts_with("tokenizer."); });
     },
     "MODEL: missing metadata key 'tokenizer.ggml.model'"},
    {"UnsupportedTokenizer",
     [](ModelParts &m) { m.value("tokenizer.ggml.model") = gguf::Value::string("llama"); },
     "MODEL: unsupported tokenizer.ggml.model 'llama' (only 'gpt2' byte-level BPE is supported)"},
    // qwen35 (Bonsai-27B): tiny-q35-q1.gguf, gated DeltaNet layers 0-2 with 2 q/k and 4 value
    // heads of 64 and conv width 4, gated attention layer 3.
    {"Qwen35MissingKey",
     [](ModelParts &m) {
       std::erase_if(m.metadata, [](auto &kv) { return kv.first == "qwen35.ssm.state_size"; });
     },
     "MODEL: missing metadata key 'qwen35.ssm.state_size'", "tiny-q35-q1.gguf"},
    {"Qwen35InnerSizeDisagrees",
     [](ModelParts &m) { m.value("qwen35.ssm.inner_size") = gguf::Value::u32(300); },
     "MODEL: qwen35.ssm.inner_size 300 is not time_step_rank 4 x state_size 64",
     "tiny-q35-q1.gguf"},
    {"Qwen35MissingTensor", [](ModelParts &m) { drop_tensor(m, "blk.1.ssm_conv1d.weight"); },
     "MODEL: missing tensor 'blk.1.ssm_conv1d.weight' (expected shape [4, 512] [conv_kernel, "
     "conv_dim])",
     "tiny-q35-q1.gguf"},
    {"Qwen35WrongShape",
     [](ModelParts &m) {
       m.tensor("blk.0.ssm_conv1d.weight").dims = {8, 256};
     },
     "MODEL: tensor 'blk.0.ssm_conv1d.weight' has shape [8, 256], expected [4, 512] "
     "[conv_kernel, conv_dim]",
     "tiny-q35-q1.gguf"},
    {"Qwen35MissingAttentionTensor", [](ModelParts &m) { drop_tensor(m, "blk.3.attn_q.weight"); },
     "MODEL: missing tensor 'blk.3.attn_q.weight' (expected shape [512, 1024] [n_embd, 2 * "
     "n_head * head_dim])",
     "tiny-q35-q1.gguf"},
};

// Failure messages name the row, not its bytes.
void PrintTo(const Row &row, std::ostream *os) {
  *os << row.name;
}

class ModelContentErrors : public ::testing::TestWithParam<Row> {};

TEST_P(ModelContentErrors, ProgramAndEngineReportTheProblem) {
  const Row &row = GetParam();
  TempDir dir;
  const std::string model = dir.write("model.gguf", tiny_q1_with(row.edit, row.source));
  const std::string message = with_path(row.message, model);
  expect_cli_error(run_bonsai({"run", "-m", model, "-p", "hi", "--backend", cpu_plugin()}), 1,
                   message);
  const Thrown engine = thrown_by([&] { (void)Engine::open(model, cpu_options()); });
  EXPECT_EQ(engine.type, "ModelError");
  EXPECT_EQ(engine.message, message);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, ModelContentErrors, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row> &info) { return info.param.name; });

// Real files pad the embedding past the tokenizer: that is not an error. The
// padding rows exist for the model but have no token text.
TEST(ModelContentErrors, VocabularySmallerThanEmbeddingIsAccepted) {
  TempDir dir;
  const std::string model =
      dir.write("model.gguf", tiny_q1_with([](ModelParts &m) {
                  auto &tokens = std::get<gguf::Array>(m.value("tokenizer.ggml.tokens").data).items;
                  auto &types =
                      std::get<gguf::Array>(m.value("tokenizer.ggml.token_type").data).items;
                  tokens.resize(2010);
                  types.resize(2010);
                }));
  const Engine engine = Engine::open(model, cpu_options());
  EXPECT_EQ(engine.n_vocab(), 2048);
  EXPECT_NO_THROW((void)engine.token_piece(2009));
  // Ids past the tokenizer are still valid model input.
  Session session = engine.create_session();
  const std::vector<int32_t> padding_row = {2040};
  EXPECT_EQ(session.eval(padding_row).logits.size(), 2048u);
  const Thrown t = thrown_by([&] { (void)engine.token_piece(2020); });
  EXPECT_EQ(t.type, "InvalidArgument");
  EXPECT_EQ(t.message, "token 2020 is outside the tokenizer's vocabulary [0, 2010)");
}

} // namespace
} // namespace bonsai::errors_test
