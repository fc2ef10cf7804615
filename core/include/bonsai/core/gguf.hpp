#pragma once
// GGUF v2/v3 reader (mmap, every read bounds-checked) and writer.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "bonsai/core/formats.hpp"

namespace bonsai::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5,
  FLOAT32 = 6, BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11,
  FLOAT64 = 12,
};
std::string_view value_type_name(ValueType t);

struct Value;
struct Array {
  ValueType element_type = ValueType::UINT8;
  std::vector<Value> items; // nested arrays allowed
};

// One metadata value. Integers keep their declared type in `type`; the payload
// is widened (signed -> int64_t, unsigned -> uint64_t, floats -> double).
struct Value {
  ValueType type = ValueType::UINT8;
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> data;

  bool is_integer() const;
  bool is_float() const;
  // Checked conversions: throw bonsai::Error naming `what` when the value is of
  // another kind or does not fit.
  uint64_t as_u64(std::string_view what) const;
  int64_t as_i64(std::string_view what) const;
  double as_f64(std::string_view what) const; // any integer or float
  bool as_bool(std::string_view what) const;
  const std::string &as_string(std::string_view what) const;
  const Array &as_array(std::string_view what) const;
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> dims; // ne0 (contiguous) first
  uint32_t type_id = 0;       // ggml type id (known: validated on open)
  uint64_t offset = 0;        // relative to the start of the data section
  const uint8_t *data = nullptr; // into the mapping
  size_t nbytes = 0;

  GgmlType type() const { return static_cast<GgmlType>(type_id); }
  int64_t n_elements() const;
};

// A read-only memory-mapped GGUF file. Opening validates the whole structure
// (header, metadata, tensor table, data bounds and alignment); afterwards every
// accessor is safe. Errors are bonsai::Error with "<path>: <what is wrong>".
class File {
public:
  static File open(const std::filesystem::path &path);
  // Parse an in-memory image (used by fuzzers and tests); `name` is used in
  // error messages. The bytes must outlive the File.
  static File parse(std::span<const uint8_t> bytes, std::string name);

  File(File &&) noexcept;
  File &operator=(File &&) noexcept;
  ~File();

  const std::string &path() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>> &metadata() const { return kv_; }
  const Value *find(std::string_view key) const; // nullptr if absent
  const Value &at(std::string_view key) const;   // throws if absent
  // Typed getters: throw a clear error when absent or of the wrong type.
  std::string get_string(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  double get_f64(std::string_view key) const;

  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  const TensorInfo *find_tensor(std::string_view name) const;

private:
  File() = default;
  struct Mapping;
  std::unique_ptr<Mapping> mapping_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Builds a GGUF v3 file. Tensor data is aligned to general.alignment (32 unless
// set in the metadata before write).
class Writer {
public:
  void set(std::string key, Value value); // replaces an existing key
  void set_string(std::string key, std::string v);
  void set_u32(std::string key, uint32_t v);
  void set_f32(std::string key, float v);
  void set_bool(std::string key, bool v);
  void set_array(std::string key, Array v);
  // Copies `bytes` (must be row_bytes(type, dims[0]) * rows long).
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                  std::span<const uint8_t> bytes);
  // Writes the file (to a temp file, then renamed). Throws on I/O errors.
  void write(const std::filesystem::path &path) const;
  // The serialized image, for tests that craft files in memory.
  std::vector<uint8_t> serialize() const;

private:
  std::vector<std::pair<std::string, Value>> kv_;
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> bytes;
  };
  std::vector<PendingTensor> tensors_;
};

} // namespace bonsai::gguf
