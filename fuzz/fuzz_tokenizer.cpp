// Fuzz target: the Qwen3 tokenizer (vocabulary loaded once from
// tests/data/qwen3-vocab.gguf). The first input byte picks the mode:
//  - even: encode the rest as text (bit 1: parse special tokens). Invalid
//    UTF-8 must give an Error; valid text must encode to ids in range that
//    decode back to its NFC form (exactly, when no added token can match).
//  - odd: the rest is a list of little-endian u32 ids (taken modulo the
//    vocabulary size) pushed through a StreamDecoder: every piece must be
//    valid UTF-8 and the pieces must equal the whole decode made valid.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utf8proc.h>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace bonsai;
using bonsai::fuzz::is_valid_utf8;
using bonsai::fuzz::make_valid_utf8;
using bonsai::fuzz::require;

const Tokenizer &qwen3() {
  static const Tokenizer tokenizer = [] {
    const char *path = std::getenv("BONSAI_FUZZ_VOCAB");
    return Tokenizer::from_gguf(gguf::File::open(path ? path : BONSAI_FUZZ_VOCAB));
  }();
  return tokenizer;
}

// NFC of valid UTF-8 straight from utf8proc (the tokenizer skips it for text
// it judges already normalized; this checks that judgement).
std::string nfc(std::string_view text) {
  utf8proc_uint8_t *out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  require(n >= 0, "utf8proc rejected valid UTF-8");
  return std::string(reinterpret_cast<const char *>(out), static_cast<size_t>(n));
}

void fuzz_encode(std::string_view text, bool parse_special) {
  const Tokenizer &tok = qwen3();
  std::vector<int32_t> ids;
  try {
    ids = tok.encode(text, parse_special);
  } catch (const Error &e) {
    require(!is_valid_utf8(text), "encode rejected valid UTF-8");
    require(std::strstr(e.what(), "not valid UTF-8") != nullptr, "unexpected encode error");
    return;
  }
  require(is_valid_utf8(text), "encode accepted invalid UTF-8");
  for (int32_t id : ids)
    require(id >= 0 && id < tok.n_vocab(), "encode produced an id outside the vocabulary");
  const std::string decoded = tok.decode(ids);
  require(is_valid_utf8(decoded), "decode(encode(text)) is not valid UTF-8");
  // Every added token of Qwen3 starts with '<'; without one, segmentation
  // cannot change normalization and the round trip is exact.
  // utf8proc 2.8 drops U+11A7 (a Hangul trailing jamo filler) after an LV
  // syllable, where Unicode, Python and Hugging Face keep it, and so does the
  // tokenizer; such text is not compared with utf8proc.
  if (text.find('<') == std::string_view::npos &&
      text.find("\xE1\x86\xA7") == std::string_view::npos)
    require(decoded == nfc(text), "decode(encode(text)) differs from NFC(text)");
}

void fuzz_stream(std::string_view bytes) {
  const Tokenizer &tok = qwen3();
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    uint32_t raw;
    std::memcpy(&raw, bytes.data() + i, 4);
    ids.push_back(static_cast<int32_t>(raw % static_cast<uint32_t>(tok.n_vocab())));
  }
  StreamDecoder decoder(tok);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string piece = decoder.push(id);
    require(is_valid_utf8(piece), "StreamDecoder::push returned invalid UTF-8");
    streamed += piece;
  }
  const std::string tail = decoder.flush();
  require(is_valid_utf8(tail), "StreamDecoder::flush returned invalid UTF-8");
  streamed += tail;
  const std::string whole = tok.decode(ids);
  if (is_valid_utf8(whole))
    require(streamed == whole, "streamed text differs from decode() of valid UTF-8");
  else
    require(streamed == make_valid_utf8(whole), "streamed text differs from sanitized decode()");
  require(decoder.flush().empty(), "flush did not empty the decoder");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const std::string_view rest(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (data[0] & 1)
    fuzz_stream(rest);
  else
    fuzz_encode(rest, (data[0] & 2) != 0);
  return 0;
}
