#pragma once
// Shared helpers for the tokenizer tests: the real Qwen3 vocabulary (loaded
// once through the GGUF reader) and file/NFC utilities.
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utf8proc.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/tokenizer.hpp"

namespace bonsai::test {

inline std::string data_path(const std::string &relative) {
  return std::string(BONSAI_TEST_DATA_DIR) + "/" + relative;
}

inline const Tokenizer &qwen3_tokenizer() {
  static const Tokenizer tokenizer = [] {
    const auto file = gguf::File::open(data_path("qwen3-vocab.gguf"));
    return Tokenizer::from_gguf(file);
  }();
  return tokenizer;
}

inline std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// NFC straight from utf8proc: the expected text of a round trip.
inline std::string nfc(const std::string &text) {
  utf8proc_uint8_t *out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  if (n < 0)
    throw std::runtime_error("utf8proc rejected the text");
  return std::string(reinterpret_cast<const char *>(out), static_cast<size_t>(n));
}

} // namespace bonsai::test
