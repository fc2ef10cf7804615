#pragma once
// GGUF v2/v3 reader (mmap, every read bounds-checked) and writer.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
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
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
// "uint8", "string", "array", ...; "unknown" for ids outside the enum.
std::string_view value_type_name(ValueType t);
bool is_known_value_type(uint32_t id);

// Arrays may nest (array of arrays) at most this deep; deeper files are
// rejected so a hostile file cannot exhaust the stack.
inline constexpr int kMaxArrayDepth = 8;

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

  // Factories that pair the declared type with the right payload.
  static Value u8(uint8_t v) { return {ValueType::UINT8, uint64_t{v}}; }
  static Value i8(int8_t v) { return {ValueType::INT8, int64_t{v}}; }
  static Value u16(uint16_t v) { return {ValueType::UINT16, uint64_t{v}}; }
  static Value i16(int16_t v) { return {ValueType::INT16, int64_t{v}}; }
  static Value u32(uint32_t v) { return {ValueType::UINT32, uint64_t{v}}; }
  static Value i32(int32_t v) { return {ValueType::INT32, int64_t{v}}; }
  static Value u64(uint64_t v) { return {ValueType::UINT64, v}; }
  static Value i64(int64_t v) { return {ValueType::INT64, v}; }
  static Value f32(float v) { return {ValueType::FLOAT32, double{v}}; }
  static Value f64(double v) { return {ValueType::FLOAT64, v}; }
  static Value boolean(bool v) { return {ValueType::BOOL, v}; }
  static Value string(std::string v) { return {ValueType::STRING, std::move(v)}; }
  static Value array(ValueType element_type, std::vector<Value> items) {
    return {ValueType::ARRAY, Array{element_type, std::move(items)}};
  }

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
  uint32_t type_id = 0;      // ggml type id as stored (known: validated on open)
  // The encoding: type_id, except that id 42 becomes Q2_0 or Q2_0_G64 as the
  // tensor's space in the file decides (see File::open).
  GgmlType encoding = GgmlType::F32;
  uint64_t offset = 0;           // relative to the start of the data section
  const uint8_t *data = nullptr; // into the mapping
  size_t nbytes = 0;

  GgmlType type() const { return encoding; }
  int64_t n_elements() const; // fits in int64 (validated on open)
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
  // Keeps the mapped bytes (bytes(), every TensorInfo::data) valid for as
  // long as the handle lives, even after this File is destroyed: a model
  // loader can drop the parsed metadata (tens of MB for a large vocabulary)
  // and keep only the tensor data. For parse(), the caller's bytes are not
  // owned: the handle is empty and they must outlive their users as before.
  std::shared_ptr<const void> mapping_handle() const { return mapping_; }
  // Drops this process's resident copies of the pages holding bytes
  // [data, data + n) of the mapping behind a handle from mapping_handle()
  // (madvise MADV_DONTNEED, whole pages, on the read-only private file
  // mapping): nothing is lost, a later read faults a page back from the page
  // cache. A host calls it once a backend has copied or repacked a weight, so
  // the pages it read stop counting against the process. Bytes outside the
  // mapping, or an empty handle: nothing to do.
  static void release_resident_pages(const std::shared_ptr<const void> &mapping_handle,
                                     const void *data, size_t n);
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  size_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  // Offset of the tensor data section from the start of the file.
  uint64_t data_offset() const { return data_offset_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>> &metadata() const { return kv_; }
  const Value *find(std::string_view key) const; // nullptr if absent
  const Value &at(std::string_view key) const;   // throws if absent
  // Typed getters: throw a clear error when absent or of the wrong type.
  std::string get_string(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  double get_f64(std::string_view key) const;

  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  const TensorInfo *find_tensor(std::string_view name) const; // nullptr if absent

private:
  File() = default;
  friend class Parser;
  struct Mapping;
  std::shared_ptr<const Mapping> mapping_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Fills a tensor's bytes at write time (the span is exactly the tensor's size
// and must be filled completely). Lets tools stream multi-GB models without
// holding every tensor in memory.
using TensorFiller = std::function<void(std::span<uint8_t>)>;

// Builds a GGUF v3 file. Tensor data is aligned to general.alignment (32 unless
// set in the metadata before write). Every input is validated when added, so
// the writer never produces a file the reader rejects.
class Writer {
public:
  void set(std::string key, Value value); // replaces an existing key in place
  void set_string(std::string key, std::string v);
  void set_u32(std::string key, uint32_t v);
  void set_i32(std::string key, int32_t v);
  void set_u64(std::string key, uint64_t v);
  void set_f32(std::string key, float v);
  void set_f64(std::string key, double v);
  void set_bool(std::string key, bool v);
  void set_array(std::string key, Array v);

  // `bytes` must be row_bytes(type, dims[0]) * rows long. Three ways to hand
  // over the data: copied, moved in (no copy), or borrowed (the caller keeps
  // the bytes alive until the last write/serialize, e.g. views into a File).
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                  std::span<const uint8_t> bytes);
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                  std::vector<uint8_t> &&bytes);
  void add_tensor_borrowed(std::string name, GgmlType type, std::vector<int64_t> dims,
                           std::span<const uint8_t> bytes);
  // Data produced at write time by `fill`.
  void add_tensor_filled(std::string name, GgmlType type, std::vector<int64_t> dims,
                         TensorFiller fill);

  // Writes the file (to a temp file in the same folder, then renamed, so no
  // reader ever sees a half-written file). Throws bonsai::Error on I/O errors
  // and, before writing anything, where check_target does.
  void write(const std::filesystem::path &path) const;

  // bonsai::Error if something other than a regular file is at `path` (a
  // FIFO or a device, which the rename would replace): for a caller to refuse
  // such a target before its work, as write() does.
  static void check_target(const std::filesystem::path &path);
  // The serialized image, for tests that craft files in memory.
  std::vector<uint8_t> serialize() const;

private:
  struct PendingTensor {
    std::string name;
    GgmlType type = GgmlType::F32;
    std::vector<int64_t> dims;
    size_t nbytes = 0;
    std::vector<uint8_t> owned;        // used when copied or moved in
    std::span<const uint8_t> borrowed; // used when borrowed
    TensorFiller fill;                 // used when filled at write time
  };
  struct Layout;
  Layout layout() const;
  void check_new_tensor(const std::string &name, GgmlType type, const std::vector<int64_t> &dims,
                        size_t *nbytes) const;
  void push_tensor(PendingTensor tensor);
  void produce(const PendingTensor &t, std::span<uint8_t> dst) const;

  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<PendingTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

} // namespace bonsai::gguf
