#pragma once
// Hand-assembles GGUF bytes field by field, independently of gguf::Writer, so
// tests can state exactly what a file contains and then break it on purpose.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::test {

class ByteBuilder {
public:
  template <class T> ByteBuilder &put(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
    return *this;
  }
  ByteBuilder &u8(uint8_t v) { return put(v); }
  ByteBuilder &u32(uint32_t v) { return put(v); }
  ByteBuilder &u64(uint64_t v) { return put(v); }
  ByteBuilder &f32(float v) { return put(v); }
  ByteBuilder &raw(std::string_view s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  // GGUF string: u64 length + bytes.
  ByteBuilder &str(std::string_view s) { return u64(s.size()).raw(s); }
  ByteBuilder &header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  }
  // Metadata entry holding one uint32.
  ByteBuilder &kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  ByteBuilder &kv_string(std::string_view key, std::string_view v) {
    return str(key).u32(8).str(v);
  }
  // One tensor-table entry.
  ByteBuilder &tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type,
                      uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims)
      u64(d);
    return u32(type).u64(offset);
  }
  ByteBuilder &pad_to(size_t alignment) {
    while (bytes.size() % alignment)
      bytes.push_back(0);
    return *this;
  }
  ByteBuilder &zeros(size_t n) {
    bytes.resize(bytes.size() + n, 0);
    return *this;
  }
  size_t size() const { return bytes.size(); }

  std::vector<uint8_t> bytes;
};

} // namespace bonsai::test
