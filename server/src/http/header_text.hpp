#pragma once
// What reading header values needs: case-insensitive ASCII comparison (field
// values such as codings and schemes are case-insensitive) and trimming of
// the blanks HTTP allows around a value.
#include <algorithm>
#include <cctype>
#include <string_view>

namespace bonsai::server {

inline bool ascii_iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

inline std::string_view trim_blanks(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos)
    return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

} // namespace bonsai::server
