#pragma once
// What the reply splitters (reasoning_split, tool_calls) share when they scan
// streamed text for tags.
#include <algorithm>
#include <string_view>

namespace bonsai::server {

inline bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// How many chars at the end of `text` are the start of `tag` (not all of it):
// text to hold back until the next piece says whether the tag completes.
inline size_t partial_tag_at_end(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n))
      return n;
  return 0;
}

} // namespace bonsai::server
