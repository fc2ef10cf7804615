#include "bonsai/core/printable.hpp"

#include <algorithm>
#include <cstdio>

#include "utf8.hpp"

namespace bonsai {

std::string printable(std::string_view text, bool escape_quotes) {
  using tokenizer_detail::Utf8Status;
  std::string out;
  out.reserve(text.size());
  const auto hex = [&out](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  };
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n')
        out += "\\n";
      else if (c == '\t')
        out += "\\t";
      else if (c == '\r')
        out += "\\r";
      else if (c < 0x20 || c == 0x7f)
        hex(c);
      else if (escape_quotes && (c == '"' || c == '\\'))
        out.append(1, '\\').append(1, static_cast<char>(c));
      else
        out += static_cast<char>(c);
      ++i;
      continue;
    }
    const tokenizer_detail::Utf8Step step = tokenizer_detail::utf8_step(text.substr(i));
    if (step.status == Utf8Status::Valid) {
      out.append(text.substr(i, step.length));
      i += step.length;
      continue;
    }
    for (size_t k = 0; k < std::max<size_t>(step.length, 1) && i < text.size(); ++k, ++i)
      hex(static_cast<unsigned char>(text[i]));
  }
  return out;
}

} // namespace bonsai
