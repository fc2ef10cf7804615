#pragma once
// GPT-2's reversible byte <-> character mapping: byte-level BPE vocabularies
// spell every byte as a printable character (space is "Ġ", newline "Ċ").
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace bonsai::tokenizer_detail {

class ByteUnicodeMap {
public:
  ByteUnicodeMap();

  // UTF-8 spelling of the character that stands for `byte`.
  const std::string &encode(uint8_t byte) const { return spelled_[byte]; }
  // The byte a code point stands for, if it is one of the 256 mapped ones.
  std::optional<uint8_t> decode(char32_t code_point) const;

private:
  static constexpr char32_t kFirstMoved = 0x100; // where non-printable bytes go
  static constexpr int kMovedCount = 68;

  std::array<char32_t, 256> code_point_{};
  std::array<std::string, 256> spelled_;
  std::array<uint8_t, kMovedCount> moved_byte_{}; // code point - kFirstMoved -> byte
};

const ByteUnicodeMap &byte_unicode_map();

// Appends the UTF-8 encoding of a code point (must be a valid scalar value).
void append_utf8(char32_t code_point, std::string &out);

} // namespace bonsai::tokenizer_detail
