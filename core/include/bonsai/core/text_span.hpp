#pragma once
// A byte range of a text, shared by the chat template (where it wrote its
// markers) and the tokenizer (where to match control tokens).
#include <cstddef>

namespace bonsai {

struct TextSpan {
  size_t begin = 0; // first byte
  size_t end = 0;   // one past the last byte
};

} // namespace bonsai
