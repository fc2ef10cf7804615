// Fuzz target: gguf::File::parse on arbitrary bytes. When the reader accepts
// the image, every metadata value and tensor is walked (checked conversions,
// tensor bytes read end to end, first row dequantized), and the file is
// written back with gguf::Writer: if the writer accepts it, reading that image
// must give the same metadata and tensors.
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace bonsai;
using bonsai::fuzz::require;

// Calls every checked conversion: each either returns or throws Error.
void walk_value(const gguf::Value &v, int depth) {
  require(depth <= gguf::kMaxArrayDepth + 1, "array nesting deeper than the reader allows");
  require(!gguf::value_type_name(v.type).empty(), "value type without a name");
  const auto attempt = [](auto &&convert) {
    try {
      convert();
    } catch (const Error &) {
    }
  };
  attempt([&] { (void)v.as_u64("fuzz"); });
  attempt([&] { (void)v.as_i64("fuzz"); });
  attempt([&] { (void)v.as_f64("fuzz"); });
  attempt([&] { (void)v.as_bool("fuzz"); });
  attempt([&] { (void)v.as_string("fuzz").size(); });
  if (const auto *array = std::get_if<gguf::Array>(&v.data)) {
    require(v.type == gguf::ValueType::ARRAY, "array payload under a non-array type");
    for (const gguf::Value &item : array->items) {
      require(item.type == array->element_type, "array item of another type than declared");
      walk_value(item, depth + 1);
    }
  }
}

// Reads every byte of the tensor (ASan flags any byte outside the input) and
// dequantizes its first row.
void walk_tensor(const gguf::File &file, const gguf::TensorInfo &t) {
  require(file.find_tensor(t.name) == &t, "tensor index does not find the tensor");
  require(!t.dims.empty() && t.dims.size() <= 4, "tensor with an invalid dimension count");
  require(file_type_traits(t.type_id).has_value(), "tensor of an unknown type accepted");
  require(t.type_id == 42 || static_cast<uint32_t>(t.type()) == t.type_id,
          "only type 42 may be read as another encoding");
  const auto traits = type_traits(static_cast<uint32_t>(t.type()));
  require(traits.has_value(), "tensor resolved to an unknown encoding");
  const int64_t n = t.n_elements();
  require(n >= 0, "negative element count");
  require(t.nbytes == static_cast<size_t>(n / traits->block_elements) * traits->block_bytes,
          "tensor byte size does not match its shape");
  if (t.nbytes == 0)
    return;
  const uint8_t *begin = file.bytes().data();
  require(t.data >= begin && t.data + t.nbytes <= begin + file.file_size(),
          "tensor data outside the file");
  require((t.data - begin - file.data_offset()) % file.alignment() == 0, "misaligned tensor");
  unsigned sum = 0;
  for (size_t i = 0; i < t.nbytes; ++i)
    sum += t.data[i];
  volatile unsigned sink = sum; // keeps the loads from being optimized away
  (void)sink;
  // Rows stay small in fuzz inputs (the data must be in the input).
  const int64_t row = t.dims[0];
  if (row > 0 && row <= (int64_t{1} << 16)) {
    std::vector<float> out(static_cast<size_t>(row));
    dequantize_row(t.type(), t.data, out.data(), row);
  }
}

bool same_value(const gguf::Value &a, const gguf::Value &b) {
  if (a.type != b.type || a.data.index() != b.data.index())
    return false;
  if (const auto *x = std::get_if<double>(&a.data)) {
    const double y = std::get<double>(b.data);
    return std::memcmp(x, &y, sizeof y) == 0;
  }
  if (const auto *x = std::get_if<gguf::Array>(&a.data)) {
    const auto &y = std::get<gguf::Array>(b.data);
    if (x->element_type != y.element_type || x->items.size() != y.items.size())
      return false;
    for (size_t i = 0; i < x->items.size(); ++i)
      if (!same_value(x->items[i], y.items[i]))
        return false;
    return true;
  }
  if (const auto *x = std::get_if<uint64_t>(&a.data))
    return *x == std::get<uint64_t>(b.data);
  if (const auto *x = std::get_if<int64_t>(&a.data))
    return *x == std::get<int64_t>(b.data);
  if (const auto *x = std::get_if<bool>(&a.data))
    return *x == std::get<bool>(b.data);
  return std::get<std::string>(a.data) == std::get<std::string>(b.data);
}

// Writes the parsed file back. The writer may refuse what the reader accepts
// (e.g. an empty key); what it does write must read back identically.
void round_trip(const gguf::File &file) {
  gguf::Writer writer;
  std::vector<uint8_t> image;
  try {
    for (const auto &[key, value] : file.metadata())
      writer.set(key, value);
    for (const gguf::TensorInfo &t : file.tensors())
      writer.add_tensor_borrowed(t.name, t.type(), t.dims, {t.data, t.nbytes});
    image = writer.serialize();
  } catch (const Error &) {
    return;
  }
  const gguf::File again = gguf::File::parse(image, "round-trip");
  require(again.metadata().size() == file.metadata().size(), "round trip changed metadata count");
  for (size_t i = 0; i < file.metadata().size(); ++i) {
    require(again.metadata()[i].first == file.metadata()[i].first, "round trip changed a key");
    require(same_value(again.metadata()[i].second, file.metadata()[i].second),
            "round trip changed a value");
  }
  require(again.tensors().size() == file.tensors().size(), "round trip changed tensor count");
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const gguf::TensorInfo &a = file.tensors()[i];
    const gguf::TensorInfo &b = again.tensors()[i];
    require(a.name == b.name && a.dims == b.dims && a.type_id == b.type_id && a.nbytes == b.nbytes,
            "round trip changed a tensor header");
    require(a.nbytes == 0 || std::memcmp(a.data, b.data, a.nbytes) == 0,
            "round trip changed tensor data");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::optional<gguf::File> file;
  try {
    file.emplace(gguf::File::parse({data, size}, "fuzz.gguf"));
  } catch (const Error &e) {
    require(std::strncmp(e.what(), "fuzz.gguf: ", 11) == 0, "error message does not name the file");
    return 0;
  }
  for (const auto &[key, value] : file->metadata()) {
    require(file->find(key) == &value, "metadata index does not find the key");
    walk_value(value, 0);
  }
  for (const char *key : {"general.architecture", "general.alignment", "general.name"}) {
    try {
      (void)file->get_string(key);
    } catch (const Error &) {
    }
    try {
      (void)file->get_u64(key);
    } catch (const Error &) {
    }
  }
  require(file->alignment() != 0 && (file->alignment() & (file->alignment() - 1)) == 0,
          "alignment is not a power of two");
  require(file->data_offset() % file->alignment() == 0, "data section is not aligned");
  for (const gguf::TensorInfo &t : file->tensors())
    walk_tensor(*file, t);
  round_trip(*file);
  return 0;
}
