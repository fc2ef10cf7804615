#include "make_model_vocab.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "bonsai/core/error.hpp"

namespace bonsai::tools {
namespace {

constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr int64_t kTypeNormal = 1; // llama.cpp token types
constexpr int64_t kTypeUnused = 5;
constexpr float kPadScore = -1000.0f; // what llama.cpp's converter gives padding
constexpr int64_t kMinNormalTokens = 256;

bool is_special_id_key(std::string_view key) {
  return key.starts_with("tokenizer.ggml.") && key.ends_with("_token_id");
}

// An integer Value of the same declared type as `like`.
gguf::Value integer_like(const gguf::Value &like, int64_t v) {
  if (std::holds_alternative<int64_t>(like.data))
    return {like.type, v};
  return {like.type, static_cast<uint64_t>(v)};
}

// The per-token arrays of the source file, checked to agree in length.
struct TokenArrays {
  const gguf::Array *tokens = nullptr;
  const gguf::Array *types = nullptr;  // optional
  const gguf::Array *scores = nullptr; // optional
};

TokenArrays token_arrays(const gguf::File &vocab) {
  TokenArrays a;
  const gguf::Value *tokens = vocab.find(kTokensKey);
  if (!tokens)
    throw Error(vocab.path() + ": has no " + std::string(kTokensKey) +
                " list; --vocab needs a GGUF file with a tokenizer");
  a.tokens = &tokens->as_array(kTokensKey);
  if (a.tokens->element_type != gguf::ValueType::STRING || a.tokens->items.empty())
    throw Error(vocab.path() + ": " + std::string(kTokensKey) +
                " must be a non-empty array of strings");
  for (auto [key, slot] : {std::pair{kTypesKey, &a.types}, std::pair{kScoresKey, &a.scores}}) {
    if (const gguf::Value *v = vocab.find(key)) {
      *slot = &v->as_array(key);
      if ((*slot)->items.size() != a.tokens->items.size())
        throw Error(vocab.path() + ": " + std::string(key) + " has " +
                    std::to_string((*slot)->items.size()) + " entries but there are " +
                    std::to_string(a.tokens->items.size()) + " tokens");
    }
  }
  if (a.types)
    for (const gguf::Value &t : a.types->items)
      t.as_i64(kTypesKey); // every entry must be an integer
  return a;
}

// The per-token arrays being built (copies of the source, maybe filtered).
struct WorkingArrays {
  gguf::Array tokens;
  std::optional<gguf::Array> types;
  std::optional<gguf::Array> scores;
};

// Appends "[PAD{id}]" tokens of type UNUSED up to n_vocab; returns how many.
int64_t pad(WorkingArrays &a, int64_t n_vocab) {
  const auto first = static_cast<int64_t>(a.tokens.items.size());
  for (int64_t id = first; id < n_vocab; ++id) {
    a.tokens.items.push_back(gguf::Value::string("[PAD" + std::to_string(id) + "]"));
    if (a.types)
      a.types->items.push_back(integer_like(a.types->items.front(), kTypeUnused));
    if (a.scores)
      a.scores->items.push_back({a.scores->element_type, double{kPadScore}});
  }
  return std::max<int64_t>(0, n_vocab - first);
}

// New id of every source token, -1 for the ones cut.
std::vector<int64_t> truncation_map(const gguf::File &vocab, const TokenArrays &src,
                                    int64_t n_vocab) {
  const size_t n = src.tokens->items.size();
  const auto type_of = [&](size_t i) {
    return src.types ? src.types->items[i].as_i64(kTypesKey) : kTypeNormal;
  };
  int64_t n_special = 0; // kept whatever the size
  for (size_t i = 0; i < n; ++i)
    n_special += type_of(i) != kTypeNormal && type_of(i) != kTypeUnused ? 1 : 0;
  int64_t normal_budget = n_vocab - n_special;
  if (normal_budget < kMinNormalTokens)
    throw Error(vocab.path() + ": a vocabulary of " + std::to_string(n_vocab) +
                " tokens is too small: the file has " + std::to_string(n_special) +
                " control/user-defined tokens and a byte-level BPE needs at least " +
                std::to_string(kMinNormalTokens) + " normal tokens, so use at least " +
                std::to_string(n_special + kMinNormalTokens));
  std::vector<int64_t> new_id(n, -1);
  int64_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    if (type_of(i) == kTypeUnused)
      continue; // old padding: pad() adds fresh entries with matching names
    if (type_of(i) == kTypeNormal) {
      if (normal_budget == 0)
        continue;
      --normal_budget;
    }
    new_id[i] = next++;
  }
  return new_id;
}

gguf::Array keep_entries(const gguf::Array &source, const std::vector<int64_t> &new_id) {
  gguf::Array kept{source.element_type, {}};
  for (size_t i = 0; i < source.items.size(); ++i)
    if (new_id[i] >= 0)
      kept.items.push_back(source.items[i]);
  return kept;
}

// Keeps the merges "a b" whose a, b and ab are all kept tokens.
gguf::Array keep_merges(const gguf::Array &merges, const gguf::Array &kept_tokens) {
  std::unordered_set<std::string_view> vocabulary;
  for (const gguf::Value &t : kept_tokens.items)
    vocabulary.insert(t.as_string(kTokensKey));
  gguf::Array kept{merges.element_type, {}};
  std::string joined;
  for (const gguf::Value &m : merges.items) {
    const std::string &merge = m.as_string(kMergesKey);
    const size_t space = merge.find(' ');
    if (space == std::string::npos)
      continue;
    const std::string_view left(merge.data(), space);
    const std::string_view right(merge.data() + space + 1, merge.size() - space - 1);
    joined.assign(left).append(right);
    if (vocabulary.count(left) && vocabulary.count(right) && vocabulary.count(joined))
      kept.items.push_back(m);
  }
  return kept;
}

} // namespace

FittedVocab fit_vocabulary(const gguf::File &vocab, int64_t n_vocab) {
  if (n_vocab <= 0)
    throw Error("the vocabulary size must be positive, got " + std::to_string(n_vocab));
  const TokenArrays src = token_arrays(vocab);
  FittedVocab out;
  out.source_tokens = static_cast<int64_t>(src.tokens->items.size());

  WorkingArrays arrays;
  std::vector<int64_t> new_id; // empty unless tokens are cut
  std::optional<gguf::Array> merges;
  if (const gguf::Value *m = vocab.find(kMergesKey))
    merges = m->as_array(kMergesKey);
  out.source_merges = merges ? static_cast<int64_t>(merges->items.size()) : 0;
  if (n_vocab >= out.source_tokens) {
    arrays.tokens = *src.tokens;
    if (src.types)
      arrays.types = *src.types;
    if (src.scores)
      arrays.scores = *src.scores;
  } else {
    new_id = truncation_map(vocab, src, n_vocab);
    arrays.tokens = keep_entries(*src.tokens, new_id);
    if (src.types)
      arrays.types = keep_entries(*src.types, new_id);
    if (src.scores)
      arrays.scores = keep_entries(*src.scores, new_id);
    if (merges)
      merges = keep_merges(*merges, arrays.tokens);
    out.dropped_tokens = out.source_tokens - static_cast<int64_t>(arrays.tokens.items.size());
  }
  out.padded_tokens = pad(arrays, n_vocab);
  out.kept_merges = merges ? static_cast<int64_t>(merges->items.size()) : 0;

  std::vector<std::pair<std::string_view, gguf::Array *>> replaced = {{kTokensKey, &arrays.tokens}};
  if (arrays.types)
    replaced.emplace_back(kTypesKey, &*arrays.types);
  if (arrays.scores)
    replaced.emplace_back(kScoresKey, &*arrays.scores);
  if (merges)
    replaced.emplace_back(kMergesKey, &*merges);

  for (const auto &[key, value] : vocab.metadata()) {
    if (!key.starts_with("tokenizer."))
      continue;
    bool done = false;
    for (auto &[new_key, new_array] : replaced) {
      if (new_key == key) {
        out.keys.emplace_back(key, gguf::Value{gguf::ValueType::ARRAY, std::move(*new_array)});
        done = true;
      }
    }
    if (done)
      continue;
    if (!new_id.empty() && is_special_id_key(key) && value.is_integer()) {
      const int64_t old = value.as_i64(key);
      if (old < 0 || old >= out.source_tokens || new_id[static_cast<size_t>(old)] < 0) {
        out.dropped_keys.push_back(key);
        continue;
      }
      out.keys.emplace_back(key, integer_like(value, new_id[static_cast<size_t>(old)]));
      continue;
    }
    out.keys.emplace_back(key, value);
  }
  return out;
}

} // namespace bonsai::tools
