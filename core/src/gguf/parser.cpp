// Parses and validates a whole GGUF v2/v3 image: header, metadata, tensor
// table, alignment and tensor data bounds. Anything wrong is one Error naming
// the file and the problem; nothing is allocated before its size is checked
// against the bytes that are actually there.
#include <cstdio>
#include <limits>
#include <string>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "cursor.hpp"
#include "parser.hpp"
#include "type42.hpp"

namespace bonsai::gguf {

namespace {

constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kDefaultAlignment = 32;

// Fewest bytes one element of this type occupies in the file; lets us reject
// a count the rest of the file cannot hold before reserving anything.
uint64_t min_encoded_size(ValueType t) {
  switch (t) {
  case ValueType::UINT8:
  case ValueType::INT8:
  case ValueType::BOOL:
    return 1;
  case ValueType::UINT16:
  case ValueType::INT16:
    return 2;
  case ValueType::UINT32:
  case ValueType::INT32:
  case ValueType::FLOAT32:
    return 4;
  case ValueType::UINT64:
  case ValueType::INT64:
  case ValueType::FLOAT64:
  case ValueType::STRING: // the u64 length
    return 8;
  case ValueType::ARRAY: // u32 element type + u64 count
    return 12;
  }
  return 1;
}

std::string in_quotes(std::string_view s) {
  // Built with append: GCC 12 warns falsely (-Wrestrict) on "'" + s + "'".
  std::string out;
  out.reserve(s.size() + 2);
  out.append(1, '\'').append(s).append(1, '\'');
  return out;
}

std::string dims_text(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string magic_text(std::span<const uint8_t> magic) {
  std::string s;
  for (uint8_t b : magic) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%s%02x", s.empty() ? "" : " ", b);
    s += buf;
  }
  return s;
}

} // namespace

class Parser {
public:
  Parser(File &file) : file_(file), in_(file.bytes_, file.name_) {}

  void run() {
    read_header();
    read_metadata();
    read_alignment();
    read_tensor_table();
    locate_tensor_data();
  }

private:
  void read_header() {
    in_.need(4, "the magic");
    const auto magic = file_.bytes_.subspan(0, 4);
    if (std::string_view(reinterpret_cast<const char *>(magic.data()), 4) != "GGUF")
      in_.fail("bad magic (expected 'GGUF' = 47 47 55 46, found " + magic_text(magic) +
               "): not a GGUF file");
    in_.read<uint32_t>("the magic");
    const uint32_t version = in_.read<uint32_t>("the version");
    if (version != 2 && version != 3) {
      std::string hint;
      if (version == 0x02000000u || version == 0x03000000u)
        hint = " (a big-endian file?)";
      in_.fail("unsupported GGUF version " + std::to_string(version) + hint +
               ": only versions 2 and 3 are supported");
    }
    file_.version_ = version;
    n_tensors_ = in_.read<uint64_t>("the tensor count");
    n_kv_ = in_.read<uint64_t>("the metadata count");
  }

  void read_metadata() {
    // Each entry needs at least a key length, a type and a 1-byte value.
    constexpr uint64_t kMinEntry = 8 + 4 + 1;
    if (n_kv_ > in_.remaining() / kMinEntry)
      in_.fail("metadata count " + std::to_string(n_kv_) +
               " is more than the rest of the file can hold (" + std::to_string(in_.remaining()) +
               " bytes left)");
    file_.kv_.reserve(static_cast<size_t>(n_kv_));
    for (uint64_t i = 0; i < n_kv_; ++i) {
      const std::string entry = "metadata entry #" + std::to_string(i);
      std::string key(in_.read_string("the key of " + entry));
      const std::string where = "metadata key " + in_quotes(key);
      const uint32_t type_id = in_.read<uint32_t>("the value type of " + where);
      if (!is_known_value_type(type_id))
        in_.fail("unknown metadata value type " + std::to_string(type_id) + " for " + where);
      Value value = read_value(static_cast<ValueType>(type_id), where, 0);
      if (!file_.kv_index_.emplace(key, file_.kv_.size()).second)
        in_.fail("duplicate " + where);
      file_.kv_.emplace_back(std::move(key), std::move(value));
    }
  }

  Value read_value(ValueType type, const std::string &where, int depth) {
    switch (type) {
    case ValueType::UINT8:
      return Value::u8(in_.read<uint8_t>(where));
    case ValueType::INT8:
      return Value::i8(in_.read<int8_t>(where));
    case ValueType::UINT16:
      return Value::u16(in_.read<uint16_t>(where));
    case ValueType::INT16:
      return Value::i16(in_.read<int16_t>(where));
    case ValueType::UINT32:
      return Value::u32(in_.read<uint32_t>(where));
    case ValueType::INT32:
      return Value::i32(in_.read<int32_t>(where));
    case ValueType::UINT64:
      return Value::u64(in_.read<uint64_t>(where));
    case ValueType::INT64:
      return Value::i64(in_.read<int64_t>(where));
    case ValueType::FLOAT32:
      return Value::f32(in_.read<float>(where));
    case ValueType::FLOAT64:
      return Value::f64(in_.read<double>(where));
    case ValueType::BOOL: {
      const uint8_t b = in_.read<uint8_t>(where);
      if (b > 1)
        in_.fail("invalid bool byte " + std::to_string(b) + " in " + where + " (must be 0 or 1)");
      return Value::boolean(b == 1);
    }
    case ValueType::STRING:
      return Value::string(std::string(in_.read_string(where)));
    case ValueType::ARRAY:
      return Value{ValueType::ARRAY, read_array(where, depth + 1)};
    }
    in_.fail("unknown metadata value type " + std::to_string(static_cast<uint32_t>(type)) + " in " +
             where);
  }

  Array read_array(const std::string &where, int depth) {
    if (depth > kMaxArrayDepth)
      in_.fail("arrays nested more than " + std::to_string(kMaxArrayDepth) + " levels deep in " +
               where);
    const uint32_t element_id = in_.read<uint32_t>("the array element type of " + where);
    if (!is_known_value_type(element_id))
      in_.fail("unknown metadata value type " + std::to_string(element_id) +
               " as the array element type of " + where);
    const auto element_type = static_cast<ValueType>(element_id);
    const uint64_t count = in_.read<uint64_t>("the array length of " + where);
    const uint64_t element_size = min_encoded_size(element_type);
    uint64_t min_bytes = 0;
    if (__builtin_mul_overflow(count, element_size, &min_bytes))
      in_.fail("array length " + std::to_string(count) + " x element size " +
               std::to_string(element_size) + " overflows 64 bits in " + where);
    if (min_bytes > in_.remaining())
      in_.fail("array length " + std::to_string(count) + " of " +
               std::string(value_type_name(element_type)) + " in " + where +
               " runs past the end of the file (needs at least " + std::to_string(min_bytes) +
               " bytes at offset " + std::to_string(in_.pos()) + ", " +
               std::to_string(in_.remaining()) + " bytes left)");
    Array array;
    array.element_type = element_type;
    array.items.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i)
      array.items.push_back(read_value(element_type, where, depth));
    return array;
  }

  void read_alignment() {
    const Value *v = file_.find("general.alignment");
    if (!v) {
      file_.alignment_ = kDefaultAlignment;
      return;
    }
    if (v->type != ValueType::UINT32)
      in_.fail("general.alignment must be a uint32, found " +
               std::string(value_type_name(v->type)));
    const uint64_t a = std::get<uint64_t>(v->data);
    if (a == 0 || (a & (a - 1)) != 0)
      in_.fail("general.alignment " + std::to_string(a) + " is not a power of two");
    file_.alignment_ = a;
  }

  void read_tensor_table() {
    // Name length + n_dims + one dim + type + offset.
    constexpr uint64_t kMinInfo = 8 + 4 + 8 + 4 + 8;
    if (n_tensors_ > in_.remaining() / kMinInfo)
      in_.fail("tensor count " + std::to_string(n_tensors_) +
               " is more than the rest of the file can hold (" + std::to_string(in_.remaining()) +
               " bytes left)");
    file_.tensors_.reserve(static_cast<size_t>(n_tensors_));
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      TensorInfo t;
      t.name = in_.read_string("the name of tensor #" + std::to_string(i));
      const std::string where = "tensor " + in_quotes(t.name);
      const uint32_t n_dims = in_.read<uint32_t>("the dimension count of " + where);
      if (n_dims == 0 || n_dims > kMaxDims)
        in_.fail(where + " has " + std::to_string(n_dims) + " dimensions (must be 1 to " +
                 std::to_string(kMaxDims) + ")");
      for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t ne = in_.read<uint64_t>("the dimensions of " + where);
        if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          in_.fail(where + " dimension " + std::to_string(d) + " is " + std::to_string(ne) +
                   ", larger than INT64_MAX");
        t.dims.push_back(static_cast<int64_t>(ne));
      }
      t.type_id = in_.read<uint32_t>("the type of " + where);
      t.offset = in_.read<uint64_t>("the data offset of " + where);
      if (!file_.tensor_index_.emplace(t.name, file_.tensors_.size()).second)
        in_.fail("duplicate tensor name " + in_quotes(t.name));
      file_.tensors_.push_back(std::move(t));
    }
  }

  void locate_tensor_data() {
    const uint64_t a = file_.alignment_;
    const uint64_t table_end = in_.pos();
    const uint64_t data_start = (table_end + a - 1) / a * a;
    const uint64_t file_size = in_.size();
    const uint64_t section = data_start <= file_size ? file_size - data_start : 0;
    file_.data_offset_ = data_start;
    for (TensorInfo &t : file_.tensors_) {
      const std::string where = "tensor " + in_quotes(t.name);
      const auto traits = file_type_traits(t.type_id);
      if (!traits)
        in_.fail(where + " has unknown type id " + std::to_string(t.type_id) +
                 " (known: 0 f32, 1 f16, 2 q4_0, 8 q8_0, 30 bf16, 34 tq1_0, 35 tq2_0, 41 q1_0, "
                 "42 q2_0, 142 pq2_0, 143 ptq1_0)");
      int64_t n = 1;
      for (int64_t ne : t.dims)
        if (__builtin_mul_overflow(n, ne, &n))
          in_.fail(where + " element count (dims " + dims_text(t.dims) + ") overflows 64 bits");
      t.encoding = traits->type;
    }
    if (const std::string problem = resolve_type42(file_.tensors_, section, a); !problem.empty())
      in_.fail(problem);
    for (TensorInfo &t : file_.tensors_) {
      const std::string where = "tensor " + in_quotes(t.name);
      const TypeTraits traits = traits_of(t.encoding);
      const int64_t n = t.n_elements();
      if (t.dims[0] % traits.block_elements != 0)
        in_.fail(where + " has dims[0] = " + std::to_string(t.dims[0]) +
                 ", not a whole number of " + std::string(traits.name) + " blocks of " +
                 std::to_string(traits.block_elements));
      uint64_t nbytes = 0;
      if (__builtin_mul_overflow(static_cast<uint64_t>(n / traits.block_elements),
                                 static_cast<uint64_t>(traits.block_bytes), &nbytes))
        in_.fail(where + " byte size (dims " + dims_text(t.dims) + ") overflows 64 bits");
      if (t.offset % a != 0)
        in_.fail(where + " data offset " + std::to_string(t.offset) +
                 " is not a multiple of the alignment " + std::to_string(a));
      if (t.offset > section || nbytes > section - t.offset)
        in_.fail(where + " data (offset " + std::to_string(t.offset) + ", " +
                 std::to_string(nbytes) + " bytes) lies outside the data section (" +
                 std::to_string(section) + " bytes from offset " + std::to_string(data_start) +
                 "): truncated file or bad offset");
      // A zero-byte tensor may sit past the end of an unpadded file: no pointer.
      t.data = nbytes == 0 ? nullptr : file_.bytes_.data() + data_start + t.offset;
      t.nbytes = static_cast<size_t>(nbytes);
    }
  }

  File &file_;
  Cursor in_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

void parse_into(File &file) {
  Parser(file).run();
}

} // namespace bonsai::gguf
