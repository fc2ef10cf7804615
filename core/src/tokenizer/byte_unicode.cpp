#include "byte_unicode.hpp"

namespace bonsai::tokenizer_detail {

namespace {

// Bytes that are printable Latin-1 characters keep their own code point.
bool maps_to_itself(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

} // namespace

void append_utf8(char32_t cp, std::string &out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

ByteUnicodeMap::ByteUnicodeMap() {
  // The other 68 bytes (controls, space, DEL, NBSP, soft hyphen) are moved, in
  // byte order, to U+0100 onwards so that none is whitespace or invisible.
  char32_t next_free = kFirstMoved;
  for (int byte = 0; byte < 256; ++byte) {
    if (maps_to_itself(byte)) {
      code_point_[byte] = static_cast<char32_t>(byte);
    } else {
      moved_byte_[next_free - kFirstMoved] = static_cast<uint8_t>(byte);
      code_point_[byte] = next_free++;
    }
    append_utf8(code_point_[byte], spelled_[byte]);
  }
}

std::optional<uint8_t> ByteUnicodeMap::decode(char32_t cp) const {
  if (cp < 0x100 && maps_to_itself(static_cast<int>(cp)))
    return static_cast<uint8_t>(cp);
  if (cp >= kFirstMoved && cp < kFirstMoved + kMovedCount)
    return moved_byte_[cp - kFirstMoved];
  return std::nullopt;
}

const ByteUnicodeMap &byte_unicode_map() {
  static const ByteUnicodeMap map;
  return map;
}

} // namespace bonsai::tokenizer_detail
