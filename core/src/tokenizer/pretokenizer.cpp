#include "pretokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <memory>
#include <pcre2.h>
#include <string>

#include "bonsai/core/error.hpp"

namespace bonsai::tokenizer_detail {

namespace {

// The `pre_tokenizer` pattern of Qwen2's tokenizer.json (Qwen3 uses the same).
constexpr const char *kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof buffer) < 0)
    return "PCRE2 error " + std::to_string(code);
  return reinterpret_cast<const char *>(buffer);
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data *m) const { pcre2_match_data_free(m); }
};

// Length of the UTF-8 character starting with `lead` (input is valid UTF-8).
size_t utf8_length(unsigned char lead) {
  if (lead < 0x80)
    return 1;
  if (lead < 0xE0)
    return 2;
  if (lead < 0xF0)
    return 3;
  return 4;
}

} // namespace

struct Qwen2PreTokenizer::Compiled {
  pcre2_code *code = nullptr;
};

Qwen2PreTokenizer::Qwen2PreTokenizer() : compiled_(new Compiled) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kQwen2Pattern), PCRE2_ZERO_TERMINATED,
                    PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (compiled_->code == nullptr) {
    delete compiled_;
    throw Error("tokenizer: cannot compile the Qwen2 pre-tokenizer pattern at offset " +
                std::to_string(error_offset) + ": " + pcre2_message(error_code));
  }
  // JIT is only an accelerator: where PCRE2 was built without it, pcre2_match
  // interprets the pattern with identical results.
  (void)pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

Qwen2PreTokenizer::~Qwen2PreTokenizer() {
  pcre2_code_free(compiled_->code);
  delete compiled_;
}

void Qwen2PreTokenizer::split(std::string_view text, std::vector<std::string_view> &pieces) const {
  // Match data is per call so that concurrent encodes never share it.
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr));
  if (!match)
    throw Error("tokenizer: out of memory allocating PCRE2 match data");
  const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    // The input was validated (and NFC output is valid), so skip PCRE2's
    // per-call UTF check, which would make the loop quadratic.
    const int rc = pcre2_match(compiled_->code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK,
                               match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      pieces.push_back(text.substr(offset)); // unreachable: every character matches
      return;
    }
    if (rc < 0)
      throw Error("tokenizer: pre-tokenizer regex failed: " + pcre2_message(rc));
    const PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(match.get());
    size_t start = ovector[0];
    size_t end = ovector[1];
    if (start > offset)
      pieces.push_back(text.substr(offset, start - offset)); // keep gaps: cover all bytes
    if (end == start) // cannot happen (every alternative consumes); never loop forever
      end = start + utf8_length(static_cast<unsigned char>(text[start]));
    pieces.push_back(text.substr(start, end - start));
    offset = end;
  }
}

} // namespace bonsai::tokenizer_detail
