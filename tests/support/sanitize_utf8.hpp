#pragma once
// Test-side UTF-8 repair, written apart from the tokenizer's stream decoder
// so that the two can be compared.
#include <string>

namespace test_support {

// `bytes` with every ill-formed UTF-8 sequence replaced by U+FFFD (one per
// maximal ill-formed subpart, Unicode's recommended practice): what streamed
// text must look like for token sequences that split characters.
inline std::string sanitize_utf8(const std::string &bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF; // allowed range of the first continuation
    if (lead < 0x80) {
      out += bytes[i++];
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      need = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      need = 2;
      lo = lead == 0xE0 ? 0xA0 : 0x80;
      hi = lead == 0xED ? 0x9F : 0xBF;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      need = 3;
      lo = lead == 0xF0 ? 0x90 : 0x80;
      hi = lead == 0xF4 ? 0x8F : 0xBF;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    size_t got = 0;
    while (got < need && i + 1 + got < bytes.size()) {
      const auto c = static_cast<unsigned char>(bytes[i + 1 + got]);
      const unsigned char min = got == 0 ? lo : 0x80, max = got == 0 ? hi : 0xBF;
      if (c < min || c > max)
        break;
      ++got;
    }
    if (got == need)
      out.append(bytes, i, need + 1);
    else
      out += "\xEF\xBF\xBD";
    i += 1 + got;
  }
  return out;
}

} // namespace test_support
