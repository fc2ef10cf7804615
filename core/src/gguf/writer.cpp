// gguf::Writer: validates everything on the way in, lays out a v3 image and
// writes it either to memory or straight to disk (tensor bytes go from their
// owner to the file without an intermediate image).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "value_check.hpp"

namespace bonsai::gguf {

namespace {

constexpr uint32_t kVersion = 3;
constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMaxDims = 4;

// Appends raw bytes. resize + memcpy rather than insert: GCC 12 reports false
// -Wstringop-overflow on vector<uint8_t>::insert at -O3.
void put_bytes(std::vector<uint8_t> &out, const void *p, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  if (n)
    std::memcpy(out.data() + at, p, n);
}

template <class T> void put(std::vector<uint8_t> &out, T v) {
  put_bytes(out, &v, sizeof(T));
}

void put_string(std::vector<uint8_t> &out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

// Payload only; the caller writes the type tag. Values were checked on set().
void put_value(std::vector<uint8_t> &out, const Value &v) {
  switch (v.type) {
  case ValueType::UINT8:
    return put(out, static_cast<uint8_t>(std::get<uint64_t>(v.data)));
  case ValueType::UINT16:
    return put(out, static_cast<uint16_t>(std::get<uint64_t>(v.data)));
  case ValueType::UINT32:
    return put(out, static_cast<uint32_t>(std::get<uint64_t>(v.data)));
  case ValueType::UINT64:
    return put(out, std::get<uint64_t>(v.data));
  case ValueType::INT8:
    return put(out, static_cast<int8_t>(std::get<int64_t>(v.data)));
  case ValueType::INT16:
    return put(out, static_cast<int16_t>(std::get<int64_t>(v.data)));
  case ValueType::INT32:
    return put(out, static_cast<int32_t>(std::get<int64_t>(v.data)));
  case ValueType::INT64:
    return put(out, std::get<int64_t>(v.data));
  case ValueType::FLOAT32:
    return put(out, static_cast<float>(std::get<double>(v.data)));
  case ValueType::FLOAT64:
    return put(out, std::get<double>(v.data));
  case ValueType::BOOL:
    return put<uint8_t>(out, std::get<bool>(v.data) ? 1 : 0);
  case ValueType::STRING:
    return put_string(out, std::get<std::string>(v.data));
  case ValueType::ARRAY: {
    const Array &a = std::get<Array>(v.data);
    put(out, static_cast<uint32_t>(a.element_type));
    put<uint64_t>(out, a.items.size());
    for (const Value &item : a.items)
      put_value(out, item);
    return;
  }
  }
}

uint64_t align_up(uint64_t n, uint64_t a) {
  return (n + a - 1) / a * a;
}

// Writes all of `bytes`, retrying short writes and signals.
void write_all(int fd, std::span<const uint8_t> bytes, const std::string &path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw Error(path + ": write failed: " + std::strerror(errno));
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

void write_zeros(int fd, uint64_t n, const std::string &path) {
  static const uint8_t zeros[4096] = {};
  while (n > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, sizeof zeros));
    write_all(fd, {zeros, chunk}, path);
    n -= chunk;
  }
}

// Removes the temp file unless the rename went through.
struct TempFile {
  std::string path;
  int fd = -1;
  bool committed = false;
  ~TempFile() {
    if (fd >= 0)
      ::close(fd);
    if (!committed)
      ::unlink(path.c_str());
  }
};

} // namespace

struct Writer::Layout {
  std::vector<uint8_t> head;     // header + metadata + tensor table + padding
  std::vector<uint64_t> offsets; // of each tensor, relative to the data section
  uint64_t data_bytes = 0;       // data section size, trailing padding included
};

void Writer::set(std::string key, Value value) {
  if (key.empty())
    throw Error("gguf writer: metadata key must not be empty");
  const std::string where = "gguf writer: metadata key '" + key + "'";
  check_value(value, where);
  if (key == "general.alignment") {
    if (value.type != ValueType::UINT32)
      throw Error(where + " must be a uint32");
    const uint64_t a = std::get<uint64_t>(value.data);
    if (a == 0 || (a & (a - 1)) != 0)
      throw Error(where + ": " + std::to_string(a) + " is not a power of two");
  }
  for (auto &[k, v] : kv_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  kv_.emplace_back(std::move(key), std::move(value));
}

void Writer::set_string(std::string key, std::string v) {
  set(std::move(key), Value::string(std::move(v)));
}
void Writer::set_u32(std::string key, uint32_t v) {
  set(std::move(key), Value::u32(v));
}
void Writer::set_i32(std::string key, int32_t v) {
  set(std::move(key), Value::i32(v));
}
void Writer::set_u64(std::string key, uint64_t v) {
  set(std::move(key), Value::u64(v));
}
void Writer::set_f32(std::string key, float v) {
  set(std::move(key), Value::f32(v));
}
void Writer::set_f64(std::string key, double v) {
  set(std::move(key), Value::f64(v));
}
void Writer::set_bool(std::string key, bool v) {
  set(std::move(key), Value::boolean(v));
}
void Writer::set_array(std::string key, Array v) {
  set(std::move(key), Value{ValueType::ARRAY, std::move(v)});
}

void Writer::check_new_tensor(const std::string &name, GgmlType type,
                              const std::vector<int64_t> &dims, size_t *nbytes) const {
  const std::string where = "gguf writer: tensor '" + name + "'";
  if (name.empty())
    throw Error("gguf writer: tensor name must not be empty");
  if (tensor_index_.count(name))
    throw Error(where + " added twice");
  if (dims.empty() || dims.size() > kMaxDims)
    throw Error(where + " has " + std::to_string(dims.size()) + " dimensions (must be 1 to 4)");
  const auto traits = type_traits(static_cast<uint32_t>(type));
  if (!traits)
    throw Error(where + " has unknown type id " + std::to_string(static_cast<uint32_t>(type)));
  int64_t rows = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0)
      throw Error(where + " has negative dimension " + std::to_string(dims[i]));
    if (i > 0 && __builtin_mul_overflow(rows, dims[i], &rows))
      throw Error(where + " element count overflows 64 bits");
  }
  if (dims[0] % traits->block_elements != 0)
    throw Error(where + " dims[0] = " + std::to_string(dims[0]) + " is not a whole number of " +
                std::string(traits->name) + " blocks of " + std::to_string(traits->block_elements));
  const size_t row = row_bytes(type, dims[0]);
  if (__builtin_mul_overflow(row, static_cast<size_t>(rows), nbytes))
    throw Error(where + " byte size overflows 64 bits");
}

void Writer::push_tensor(PendingTensor tensor) {
  tensor_index_.emplace(tensor.name, tensors_.size());
  tensors_.push_back(std::move(tensor));
}

namespace {

void check_size(const std::string &name, size_t expected, size_t got) {
  if (expected != got)
    throw Error("gguf writer: tensor '" + name + "' needs " + std::to_string(expected) +
                " bytes, got " + std::to_string(got));
}

} // namespace

void Writer::add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                        std::span<const uint8_t> bytes) {
  std::vector<uint8_t> copy(bytes.begin(), bytes.end());
  add_tensor(std::move(name), type, std::move(dims), std::move(copy));
}

void Writer::add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                        std::vector<uint8_t> &&bytes) {
  PendingTensor t;
  t.name = std::move(name);
  t.type = type;
  t.dims = std::move(dims);
  check_new_tensor(t.name, type, t.dims, &t.nbytes);
  check_size(t.name, t.nbytes, bytes.size());
  t.owned = std::move(bytes);
  push_tensor(std::move(t));
}

void Writer::add_tensor_borrowed(std::string name, GgmlType type, std::vector<int64_t> dims,
                                 std::span<const uint8_t> bytes) {
  PendingTensor t;
  t.name = std::move(name);
  t.type = type;
  t.dims = std::move(dims);
  check_new_tensor(t.name, type, t.dims, &t.nbytes);
  check_size(t.name, t.nbytes, bytes.size());
  t.borrowed = bytes;
  push_tensor(std::move(t));
}

void Writer::add_tensor_filled(std::string name, GgmlType type, std::vector<int64_t> dims,
                               TensorFiller fill) {
  PendingTensor t;
  t.name = std::move(name);
  t.type = type;
  t.dims = std::move(dims);
  check_new_tensor(t.name, type, t.dims, &t.nbytes);
  if (!fill)
    throw Error("gguf writer: tensor '" + t.name + "' has no fill function");
  t.fill = std::move(fill);
  push_tensor(std::move(t));
}

Writer::Layout Writer::layout() const {
  uint64_t alignment = kDefaultAlignment;
  for (const auto &[k, v] : kv_)
    if (k == "general.alignment")
      alignment = std::get<uint64_t>(v.data);

  Layout l;
  auto &out = l.head;
  put_bytes(out, "GGUF", 4);
  put<uint32_t>(out, kVersion);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kv_.size());
  for (const auto &[key, value] : kv_) {
    put_string(out, key);
    put(out, static_cast<uint32_t>(value.type));
    put_value(out, value);
  }
  uint64_t offset = 0;
  for (const PendingTensor &t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (int64_t ne : t.dims)
      put<uint64_t>(out, static_cast<uint64_t>(ne));
    put(out, traits_of(t.type).file_id); // Q2_0_G64 is stored as 42, like mainline
    put<uint64_t>(out, offset);
    l.offsets.push_back(offset);
    offset = align_up(offset + t.nbytes, alignment);
  }
  l.data_bytes = offset;
  out.resize(align_up(out.size(), alignment), 0);
  return l;
}

// Copies (or generates) a tensor's bytes into dst, which is exactly nbytes.
void Writer::produce(const PendingTensor &t, std::span<uint8_t> dst) const {
  if (t.fill)
    t.fill(dst);
  else if (!t.borrowed.empty())
    std::memcpy(dst.data(), t.borrowed.data(), t.nbytes);
  else if (t.nbytes)
    std::memcpy(dst.data(), t.owned.data(), t.nbytes);
}

std::vector<uint8_t> Writer::serialize() const {
  Layout l = layout();
  std::vector<uint8_t> image = std::move(l.head);
  const size_t data_start = image.size();
  image.resize(data_start + l.data_bytes, 0);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor &t = tensors_[i];
    produce(t, std::span<uint8_t>(image.data() + data_start + l.offsets[i], t.nbytes));
  }
  return image;
}

// The file is written beside the target and renamed over it, so a FIFO or
// a device there would be replaced by a regular file.
void Writer::check_target(const std::filesystem::path &path) {
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode))
    throw Error(path.string() + ": exists and is not a regular file; not replacing it");
}

void Writer::write(const std::filesystem::path &path) const {
  static std::atomic<unsigned> counter{0};
  const std::string target = path.string();
  check_target(path);
  TempFile tmp;
  tmp.path = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (tmp.fd < 0)
    throw Error(target + ": cannot create temp file " + tmp.path + ": " + std::strerror(errno));

  const Layout l = layout();
  write_all(tmp.fd, l.head, target);
  uint64_t pos = 0;             // within the data section
  std::vector<uint8_t> scratch; // only for filled tensors, reused
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor &t = tensors_[i];
    write_zeros(tmp.fd, l.offsets[i] - pos, target);
    if (t.fill) {
      scratch.assign(t.nbytes, 0);
      t.fill(scratch);
      write_all(tmp.fd, scratch, target);
    } else {
      write_all(tmp.fd, t.borrowed.empty() ? std::span<const uint8_t>(t.owned) : t.borrowed,
                target);
    }
    pos = l.offsets[i] + t.nbytes;
  }
  write_zeros(tmp.fd, l.data_bytes - pos, target);

  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0)
    throw Error(target + ": write failed on close: " + std::strerror(errno));
  if (::rename(tmp.path.c_str(), target.c_str()) != 0)
    throw Error(target + ": cannot rename temp file into place: " + std::strerror(errno));
  tmp.committed = true;
}

} // namespace bonsai::gguf
