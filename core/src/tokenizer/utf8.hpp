#pragma once
// UTF-8 scanning shared by input validation and the streaming decoder.
#include <cstddef>
#include <string>
#include <string_view>

namespace bonsai::tokenizer_detail {

enum class Utf8Status {
  Valid,     // a well-formed character of `length` bytes
  Invalid,   // `length` bytes (>= 1) that can never start a character: replace them
  Truncated, // a valid prefix cut off by the end of the input
};

struct Utf8Step {
  Utf8Status status;
  size_t length;
};

// Classifies the sequence starting at text[0] (text must not be empty).
// Invalid sequences are reported as their maximal subpart (Unicode 15 §3.9),
// so replacing each with one U+FFFD gives the standard result.
Utf8Step utf8_step(std::string_view text);

// Offset of the first byte that is not part of well-formed UTF-8, or npos.
size_t find_invalid_utf8(std::string_view text);

// Appends the valid characters of `bytes` to `out`, one U+FFFD per invalid
// subpart. A truncated character at the end is left unconsumed unless
// `final`, in which case it becomes U+FFFD. Returns the bytes consumed.
size_t append_sanitized_utf8(std::string_view bytes, bool final, std::string &out);

} // namespace bonsai::tokenizer_detail
