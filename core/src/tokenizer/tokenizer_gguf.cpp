// The only part of the tokenizer that knows about GGUF: copy the tokenizer.*
// metadata into a TokenizerData.
#include <limits>
#include <variant>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "tokenizer_impl.hpp"

namespace bonsai {

namespace {

std::string describe(const gguf::File &file, std::string_view key) {
  return file.path() + ": metadata key '" + std::string(key) + "'";
}

std::string describe_item(const gguf::File &file, std::string_view key, size_t index) {
  return describe(file, key) + "[" + std::to_string(index) + "]";
}

std::vector<std::string> read_strings(const gguf::File &file, std::string_view key) {
  const gguf::Array &array = file.at(key).as_array(describe(file, key));
  std::vector<std::string> out;
  out.reserve(array.items.size());
  for (size_t i = 0; i < array.items.size(); ++i) {
    // Build the error location only when it is needed: 300k items per file.
    const auto *s = std::get_if<std::string>(&array.items[i].data);
    out.push_back(s ? *s : array.items[i].as_string(describe_item(file, key, i)));
  }
  return out;
}

std::vector<TokenType> read_token_types(const gguf::File &file) {
  constexpr std::string_view key = "tokenizer.ggml.token_type";
  const gguf::Value *value = file.find(key);
  if (value == nullptr)
    return {}; // optional: every token is then a normal one
  const gguf::Array &array = value->as_array(describe(file, key));
  std::vector<TokenType> out;
  out.reserve(array.items.size());
  for (size_t i = 0; i < array.items.size(); ++i) {
    const auto *small = std::get_if<int64_t>(&array.items[i].data);
    const int64_t type = small ? *small : array.items[i].as_i64(describe_item(file, key, i));
    if (type < static_cast<int64_t>(TokenType::Undefined) ||
        type > static_cast<int64_t>(TokenType::Byte))
      throw Error(describe_item(file, key, i) + ": unknown token type " + std::to_string(type));
    out.push_back(static_cast<TokenType>(type));
  }
  return out;
}

int32_t read_optional_id(const gguf::File &file, std::string_view key) {
  const gguf::Value *value = file.find(key);
  if (value == nullptr)
    return -1;
  const uint64_t id = value->as_u64(describe(file, key));
  if (id > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    throw Error(describe(file, key) + ": token id " + std::to_string(id) + " is out of range");
  return static_cast<int32_t>(id);
}

} // namespace

Tokenizer Tokenizer::from_gguf(const gguf::File &file) {
  TokenizerData data;
  data.source = file.path();
  data.model = file.get_string("tokenizer.ggml.model");
  data.pre = file.get_string("tokenizer.ggml.pre");
  // Say "unsupported" before complaining about keys another model type lacks.
  check_supported_format(data.source, data.model, data.pre);
  data.tokens = read_strings(file, "tokenizer.ggml.tokens");
  data.token_types = read_token_types(file);
  data.merges = read_strings(file, "tokenizer.ggml.merges");
  data.bos_id = read_optional_id(file, "tokenizer.ggml.bos_token_id");
  data.eos_id = read_optional_id(file, "tokenizer.ggml.eos_token_id");
  data.pad_id = read_optional_id(file, "tokenizer.ggml.padding_token_id");
  if (const gguf::Value *tmpl = file.find("tokenizer.chat_template"))
    data.chat_template = tmpl->as_string(describe(file, "tokenizer.chat_template"));
  return Tokenizer(std::move(data));
}

} // namespace bonsai
