#pragma once
// Unicode NFC, the normalizer of the Qwen2/Qwen3 Hugging Face tokenizer.
#include <span>
#include <string>
#include <string_view>

namespace bonsai::tokenizer_detail {

// Code point ranges whose characters NFC never changes, wherever they stand:
// combining class 0, no canonical decomposition (or one they compose back
// to), and never the second half of a canonical composition. Text made only
// of them is already NFC, which spares utf8proc for plain prose, code, CJK
// and emoji. tests/core/tokenizer/normalize_test.cpp checks every listed code
// point against utf8proc's Unicode data.
struct CodePointRange {
  char32_t first;
  char32_t last;
};
std::span<const CodePointRange> nfc_inert_ranges();

// False when `text` (valid UTF-8) is certainly NFC already.
bool may_need_nfc(std::string_view text);

// NFC of valid UTF-8 text, the same as utf8proc_map(STABLE | COMPOSE) but in
// O(n log n) however the combining marks are arranged (utf8proc's own
// canonical ordering is quadratic in a run of marks). Throws bonsai::Error if
// utf8proc rejects the text.
std::string nfc(std::string_view text);

} // namespace bonsai::tokenizer_detail
