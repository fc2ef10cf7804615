#include <algorithm>
#include <cstdio>
#include <limits>

#include "bonsai/core/error.hpp"
#include "bonsai/core/printable.hpp"
#include "byte_unicode.hpp"
#include "normalize.hpp"
#include "tokenizer_impl.hpp"
#include "utf8.hpp"

namespace bonsai {

using namespace tokenizer_detail;

namespace {

std::string hex_byte(unsigned char b) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", b);
  return hex;
}

bool decodes_as_text(TokenType type) {
  return type == TokenType::Control || type == TokenType::UserDefined || type == TokenType::Unknown;
}

// Byte-level token text -> the bytes it stands for. A character outside the
// 256 mapped ones (or invalid UTF-8) cannot come from byte-level BPE; it is
// kept as written rather than dropped.
void append_byte_decoded(std::string_view text, std::string &out) {
  const ByteUnicodeMap &map = byte_unicode_map();
  size_t i = 0;
  while (i < text.size()) {
    const Utf8Step step = utf8_step(text.substr(i));
    if (step.status != Utf8Status::Valid) {
      out.append(text.substr(i, step.length));
      i += step.length;
      continue;
    }
    const auto *p = reinterpret_cast<const unsigned char *>(text.data() + i);
    char32_t cp = step.length == 1 ? p[0] : p[0] & (0xFF >> (step.length + 1));
    for (size_t k = 1; k < step.length; ++k)
      cp = (cp << 6) | (p[k] & 0x3F);
    if (const auto byte = map.decode(cp))
      out.push_back(static_cast<char>(*byte));
    else
      out.append(text.substr(i, step.length));
    i += step.length;
  }
}

} // namespace

void check_supported_format(std::string_view where, std::string_view model, std::string_view pre) {
  if (model != "gpt2")
    throw Error(std::string(where) + ": unsupported tokenizer.ggml.model '" + printable(model) +
                "' (only 'gpt2' byte-level BPE is supported)");
  if (pre != "qwen2")
    throw Error(std::string(where) + ": unsupported tokenizer.ggml.pre '" + printable(pre) +
                "' (only the 'qwen2' pre-tokenizer is supported)");
}

Tokenizer::Impl::Impl(TokenizerData d) : data(std::move(d)) {
  check_format();
  index_tokens();
  build_decoded();
  build_byte_tokens();
  build_merges();
  build_added_tokens();
  check_special_ids();
  // The merge lines live on only as the merge table (~5 MB of strings saved).
  data.merges = std::vector<std::string>();
}

std::string Tokenizer::Impl::where() const {
  return data.source.empty() ? "tokenizer" : data.source;
}

void Tokenizer::Impl::check_id(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= data.tokens.size())
    throw Error(where() + ": token id " + std::to_string(id) + " is out of range (vocabulary has " +
                std::to_string(data.tokens.size()) + " tokens)");
}

void Tokenizer::Impl::check_format() const {
  check_supported_format(where(), data.model, data.pre);
  if (data.tokens.empty())
    throw Error(where() + ": the vocabulary (tokenizer.ggml.tokens) is empty");
  if (data.tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw Error(where() + ": the vocabulary has more tokens than 32-bit ids can address");
  if (!data.token_types.empty() && data.token_types.size() != data.tokens.size())
    throw Error(where() + ": tokenizer.ggml.token_type has " +
                std::to_string(data.token_types.size()) +
                " entries but tokenizer.ggml.tokens has " + std::to_string(data.tokens.size()));
  for (size_t i = 0; i < data.token_types.size(); ++i) {
    const auto t = static_cast<int32_t>(data.token_types[i]);
    if (t < 0 || t > static_cast<int32_t>(TokenType::Byte))
      throw Error(where() + ": token " + std::to_string(i) + " has unknown token type " +
                  std::to_string(t));
  }
}

void Tokenizer::Impl::index_tokens() {
  id_of.build(data.tokens);
}

void Tokenizer::Impl::build_decoded() {
  decoded_offset.reserve(data.tokens.size() + 1);
  decoded_offset.push_back(0);
  for (size_t i = 0; i < data.tokens.size(); ++i) {
    const TokenType type = data.token_types.empty() ? TokenType::Normal : data.token_types[i];
    if (decodes_as_text(type))
      decoded.append(data.tokens[i]);
    else if (type != TokenType::Unused) // padding rows decode to nothing
      append_byte_decoded(data.tokens[i], decoded);
    decoded_offset.push_back(decoded.size());
  }
}

void Tokenizer::Impl::build_byte_tokens() {
  const ByteUnicodeMap &map = byte_unicode_map();
  for (int b = 0; b < 256; ++b) {
    const int32_t id = id_of.find(map.encode(static_cast<uint8_t>(b)));
    if (id < 0) {
      throw Error(where() + ": the vocabulary has no token for byte " +
                  hex_byte(static_cast<unsigned char>(b)) + " ('" +
                  map.encode(static_cast<uint8_t>(b)) + "'), which byte-level BPE requires");
    }
    byte_tokens[b] = id;
  }
}

void Tokenizer::Impl::build_merges() {
  merges.reserve(data.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < data.merges.size(); ++rank) {
    const std::string &line = data.merges[rank];
    const size_t space = line.find(' ');
    const auto describe = [&] {
      return where() + ": merge " + std::to_string(rank) + " ('" + printable(line) + "')";
    };
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw Error(describe() + " is not of the form 'left right'");
    const std::string_view left(line.data(), space);
    const std::string_view right(line.data() + space + 1, line.size() - space - 1);
    joined.assign(left).append(right);
    const auto lookup = [&](std::string_view piece) {
      const int32_t id = id_of.find(piece);
      if (id < 0)
        throw Error(describe() + " needs '" + printable(piece) +
                    "', which is not in the vocabulary");
      return id;
    };
    const int32_t left_id = lookup(left);
    const int32_t right_id = lookup(right);
    const int32_t merged_id = lookup(joined);
    // A repeated pair keeps its first (best) rank.
    merges.insert(left_id, right_id, Merge{static_cast<uint32_t>(rank), merged_id});
  }
}

void Tokenizer::Impl::build_added_tokens() {
  for (size_t i = 0; i < data.token_types.size(); ++i) {
    const TokenType type = data.token_types[i];
    if (data.tokens[i].empty())
      continue;
    if (type == TokenType::Control || type == TokenType::UserDefined)
      control_and_user.add(data.tokens[i], static_cast<int32_t>(i));
    if (type == TokenType::UserDefined)
      user_only.add(data.tokens[i], static_cast<int32_t>(i));
  }
  control_and_user.finish();
  user_only.finish();
  im_start = id_of.find("<|im_start|>");
  im_end = id_of.find("<|im_end|>");
  endoftext = id_of.find("<|endoftext|>");
}

void Tokenizer::Impl::check_special_ids() const {
  const auto check = [this](int32_t id, const char *key) {
    if (id != -1 && (id < 0 || static_cast<size_t>(id) >= data.tokens.size()))
      throw Error(where() + ": " + key + " = " + std::to_string(id) +
                  " is not a token id (vocabulary has " + std::to_string(data.tokens.size()) +
                  " tokens)");
  };
  check(data.bos_id, "tokenizer.ggml.bos_token_id");
  check(data.eos_id, "tokenizer.ggml.eos_token_id");
  check(data.pad_id, "tokenizer.ggml.padding_token_id");
}

Tokenizer::Tokenizer(TokenizerData data) : impl_(std::make_shared<const Impl>(std::move(data))) {}

void Tokenizer::Impl::check_utf8(std::string_view text) const {
  if (const size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
    throw Error(where() + ": cannot tokenize text that is not valid UTF-8 (byte " +
                hex_byte(static_cast<unsigned char>(text[bad])) + " at offset " +
                std::to_string(bad) + ")");
}

void Tokenizer::Impl::encode_text(std::string_view text, const AddedTokenMatcher &matcher,
                                  std::vector<int32_t> &ids) const {
  std::vector<AddedTokenMatcher::Segment> segments;
  matcher.split(text, segments);
  std::vector<std::string_view> pieces;
  BpeScratch scratch;
  for (const auto &segment : segments) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    // Normalize after the added tokens are cut out, as Hugging Face does: NFC
    // may merge a token's last character with a following combining mark.
    const std::string normalized = nfc(segment.text);
    pieces.clear();
    pre_tokenizer.split(normalized, pieces);
    for (std::string_view piece : pieces)
      bpe_encode(piece, byte_tokens, merges, scratch, ids);
  }
}

int32_t Tokenizer::Impl::control_token(std::string_view text, TextSpan span) const {
  const int32_t id = id_of.find(text);
  if (id < 0 || data.token_types.empty() ||
      data.token_types[static_cast<size_t>(id)] != TokenType::Control)
    throw Error(where() + ": the text at bytes [" + std::to_string(span.begin) + ", " +
                std::to_string(span.end) + ") is not one control token");
  return id;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  const Impl &m = *impl_;
  m.check_utf8(text);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  m.encode_text(text, parse_special ? m.control_and_user : m.user_only, ids);
  return ids;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text,
                                       std::span<const TextSpan> control_spans) const {
  const Impl &m = *impl_;
  m.check_utf8(text);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  size_t plain_start = 0;
  for (const TextSpan &span : control_spans) {
    if (span.begin < plain_start || span.end < span.begin || span.end > text.size())
      throw Error(m.where() + ": control token span [" + std::to_string(span.begin) + ", " +
                  std::to_string(span.end) + ") is out of order or outside the " +
                  std::to_string(text.size()) + "-byte text");
    m.encode_text(text.substr(plain_start, span.begin - plain_start), m.user_only, ids);
    ids.push_back(m.control_token(text.substr(span.begin, span.end - span.begin), span));
    plain_start = span.end;
  }
  m.encode_text(text.substr(plain_start), m.user_only, ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids)
    out.append(token_bytes(id));
  return out;
}

int32_t Tokenizer::n_vocab() const {
  return static_cast<int32_t>(impl_->data.tokens.size());
}

const std::string &Tokenizer::token_text(int32_t id) const {
  impl_->check_id(id);
  return impl_->data.tokens[static_cast<size_t>(id)];
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  impl_->check_id(id);
  const auto i = static_cast<size_t>(id);
  const size_t begin = impl_->decoded_offset[i];
  return std::string_view(impl_->decoded).substr(begin, impl_->decoded_offset[i + 1] - begin);
}

TokenType Tokenizer::token_type(int32_t id) const {
  impl_->check_id(id);
  return impl_->data.token_types.empty() ? TokenType::Normal
                                         : impl_->data.token_types[static_cast<size_t>(id)];
}

bool Tokenizer::is_special(int32_t id) const {
  const TokenType type = token_type(id);
  return type == TokenType::Control || type == TokenType::UserDefined;
}

int32_t Tokenizer::token_id(std::string_view text) const {
  return impl_->id_of.find(text);
}

int32_t Tokenizer::bos_id() const {
  return impl_->data.bos_id;
}
int32_t Tokenizer::eos_id() const {
  return impl_->data.eos_id;
}
int32_t Tokenizer::pad_id() const {
  return impl_->data.pad_id;
}
int32_t Tokenizer::im_start_id() const {
  return impl_->im_start;
}
int32_t Tokenizer::im_end_id() const {
  return impl_->im_end;
}
int32_t Tokenizer::endoftext_id() const {
  return impl_->endoftext;
}

std::vector<int32_t> Tokenizer::stop_ids() const {
  std::vector<int32_t> ids;
  for (int32_t id : {eos_id(), im_end_id(), endoftext_id()})
    if (id >= 0)
      ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

const std::string &Tokenizer::chat_template() const {
  return impl_->data.chat_template;
}

} // namespace bonsai
