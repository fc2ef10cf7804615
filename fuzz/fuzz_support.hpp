#pragma once
// Shared by the fuzz targets: the libFuzzer entry point's signature and a
// check that aborts (so libFuzzer records the input) when an invariant fails.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace bonsai::fuzz {

// An invariant of the code under test, not an input check: a failure is a bug.
inline void require(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

// UTF-8 per Unicode Table 3-7 (no overlongs, surrogates or values past
// U+10FFFF), written here on purpose rather than reusing the tokenizer's own
// validator, so the fuzzers check that code instead of trusting it.
struct Utf8Lead {
  size_t length = 0; // 0: the byte never starts a character
  unsigned second_lo = 0x80, second_hi = 0xBF;
};

inline Utf8Lead utf8_lead(unsigned char c) {
  if (c < 0x80)
    return {1};
  if (c >= 0xC2 && c <= 0xDF)
    return {2};
  if (c >= 0xE0 && c <= 0xEF)
    return {3, c == 0xE0 ? 0xA0u : 0x80u, c == 0xED ? 0x9Fu : 0xBFu};
  if (c >= 0xF0 && c <= 0xF4)
    return {4, c == 0xF0 ? 0x90u : 0x80u, c == 0xF4 ? 0x8Fu : 0xBFu};
  return {0};
}

// Bytes of the longest valid start of a character at s[0]: its full length
// when complete and valid, else the maximal subpart (>= 1) that a U+FFFD
// replaces. `complete` tells which.
inline size_t utf8_char(std::string_view s, bool &complete) {
  const Utf8Lead lead = utf8_lead(static_cast<unsigned char>(s[0]));
  complete = false;
  if (lead.length == 0)
    return 1;
  for (size_t k = 1; k < lead.length; ++k) {
    if (k >= s.size())
      return k;
    const auto b = static_cast<unsigned char>(s[k]);
    const unsigned lo = k == 1 ? lead.second_lo : 0x80, hi = k == 1 ? lead.second_hi : 0xBF;
    if (b < lo || b > hi)
      return k;
  }
  complete = true;
  return lead.length;
}

inline bool is_valid_utf8(std::string_view s) {
  while (!s.empty()) {
    bool complete = false;
    const size_t n = utf8_char(s, complete);
    if (!complete)
      return false;
    s.remove_prefix(n);
  }
  return true;
}

// Every maximal invalid subpart replaced by U+FFFD (Unicode's recommended
// practice, which StreamDecoder follows).
inline std::string make_valid_utf8(std::string_view s) {
  std::string out;
  while (!s.empty()) {
    bool complete = false;
    const size_t n = utf8_char(s, complete);
    out.append(complete ? s.substr(0, n) : std::string_view("\xEF\xBF\xBD"));
    s.remove_prefix(n);
  }
  return out;
}

} // namespace bonsai::fuzz
