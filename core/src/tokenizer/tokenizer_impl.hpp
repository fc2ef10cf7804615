#pragma once
// The shared, immutable state behind bonsai::Tokenizer.
#include <string>
#include <string_view>
#include <vector>

#include "added_tokens.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "bpe.hpp"
#include "pretokenizer.hpp"
#include "token_index.hpp"

namespace bonsai {

// Throws unless model/pre name the one tokenizer implemented here.
void check_supported_format(std::string_view where, std::string_view model, std::string_view pre);

struct Tokenizer::Impl {
  explicit Impl(TokenizerData data); // validates; throws bonsai::Error

  // Prefix for error messages: "tokenizer (<source>)".
  std::string where() const;
  void check_id(int32_t id) const;
  // Throws bonsai::Error naming the first invalid byte.
  void check_utf8(std::string_view text) const;
  // Appends the ids of `text`, matching the added tokens that `matcher` holds.
  void encode_text(std::string_view text, const tokenizer_detail::AddedTokenMatcher &matcher,
                   std::vector<int32_t> &ids) const;
  // The id of the CONTROL token spelled exactly `text`; throws otherwise.
  int32_t control_token(std::string_view text, TextSpan span) const;

  TokenizerData data;
  tokenizer_detail::TokenIndex id_of; // over data.tokens

  // What each token decodes to, concatenated: token i is
  // decoded[decoded_offset[i] .. decoded_offset[i + 1]).
  std::string decoded;
  std::vector<size_t> decoded_offset;

  int32_t byte_tokens[256] = {};
  tokenizer_detail::MergeTable merges;
  tokenizer_detail::AddedTokenMatcher control_and_user; // parse_special = true
  tokenizer_detail::AddedTokenMatcher user_only;        // parse_special = false
  tokenizer_detail::Qwen2PreTokenizer pre_tokenizer;

  int32_t im_start = -1;
  int32_t im_end = -1;
  int32_t endoftext = -1;

private:
  void check_format() const;
  void index_tokens();
  void build_decoded();
  void build_byte_tokens();
  void build_merges();
  void build_added_tokens();
  void check_special_ids() const;
};

} // namespace bonsai
