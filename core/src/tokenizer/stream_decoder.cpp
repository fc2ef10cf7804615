#include "bonsai/core/tokenizer.hpp"
#include "utf8.hpp"

namespace bonsai {

StreamDecoder::StreamDecoder(Tokenizer tokenizer) : tokenizer_(std::move(tokenizer)) {}

std::string StreamDecoder::push(int32_t id) {
  pending_.append(tokenizer_.token_bytes(id));
  std::string out;
  const size_t consumed = tokenizer_detail::append_sanitized_utf8(pending_, false, out);
  pending_.erase(0, consumed);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  tokenizer_detail::append_sanitized_utf8(pending_, true, out);
  pending_.clear();
  return out;
}

} // namespace bonsai
