#pragma once
// A bounds-checked little-endian reader over a byte span. Every read checks
// the remaining length first, so a hostile file can only produce an Error.
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "bonsai/core/error.hpp"

namespace bonsai::gguf {

static_assert(std::endian::native == std::endian::little,
              "GGUF files are little-endian; this reader copies bytes as-is");

class Cursor {
public:
  Cursor(std::span<const uint8_t> bytes, const std::string &file) : bytes_(bytes), file_(file) {}

  size_t pos() const { return pos_; }
  size_t size() const { return bytes_.size(); }
  size_t remaining() const { return bytes_.size() - pos_; }

  [[noreturn]] void fail(const std::string &what) const { throw Error(file_ + ": " + what); }

  // Throws "truncated file" unless n more bytes are available.
  void need(uint64_t n, std::string_view what) const {
    if (n > remaining())
      fail("truncated file: " + std::string(what) + " needs " + std::to_string(n) +
           " bytes at offset " + std::to_string(pos_) + ", but the file ends at " +
           std::to_string(bytes_.size()));
  }

  template <class T> T read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // A GGUF string: u64 length, then that many bytes (no terminator).
  std::string_view read_string(std::string_view what) {
    const uint64_t length = read<uint64_t>(what);
    if (length > remaining())
      fail("string length " + std::to_string(length) + " in " + std::string(what) +
           " runs past the end of the file (offset " + std::to_string(pos_) + ", " +
           std::to_string(remaining()) + " bytes left)");
    std::string_view s(reinterpret_cast<const char *>(bytes_.data() + pos_),
                       static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return s;
  }

private:
  std::span<const uint8_t> bytes_;
  const std::string &file_;
  size_t pos_ = 0;
};

} // namespace bonsai::gguf
