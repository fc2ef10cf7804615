// Consistency checks of gguf::Value before it is written.
#include <cstdint>
#include <limits>
#include <string>

#include "bonsai/core/error.hpp"
#include "value_check.hpp"

namespace bonsai::gguf {

namespace {

[[noreturn]] void bad(const std::string &where, const std::string &what) {
  throw Error(where + ": " + what);
}

void check_unsigned(const Value &v, const std::string &where, uint64_t max) {
  const auto *u = std::get_if<uint64_t>(&v.data);
  if (!u)
    bad(where, std::string(value_type_name(v.type)) + " value must hold an unsigned integer");
  if (*u > max)
    bad(where, std::to_string(*u) + " does not fit in " + std::string(value_type_name(v.type)));
}

void check_signed(const Value &v, const std::string &where, int64_t min, int64_t max) {
  const auto *i = std::get_if<int64_t>(&v.data);
  if (!i)
    bad(where, std::string(value_type_name(v.type)) + " value must hold a signed integer");
  if (*i < min || *i > max)
    bad(where, std::to_string(*i) + " does not fit in " + std::string(value_type_name(v.type)));
}

template <class T> void check_payload(const Value &v, const std::string &where) {
  if (!std::holds_alternative<T>(v.data))
    bad(where, std::string(value_type_name(v.type)) + " value holds the wrong kind of payload");
}

} // namespace

void check_value(const Value &v, const std::string &where, int depth) {
  switch (v.type) {
  case ValueType::UINT8:
    return check_unsigned(v, where, std::numeric_limits<uint8_t>::max());
  case ValueType::UINT16:
    return check_unsigned(v, where, std::numeric_limits<uint16_t>::max());
  case ValueType::UINT32:
    return check_unsigned(v, where, std::numeric_limits<uint32_t>::max());
  case ValueType::UINT64:
    return check_unsigned(v, where, std::numeric_limits<uint64_t>::max());
  case ValueType::INT8:
    return check_signed(v, where, INT8_MIN, INT8_MAX);
  case ValueType::INT16:
    return check_signed(v, where, INT16_MIN, INT16_MAX);
  case ValueType::INT32:
    return check_signed(v, where, INT32_MIN, INT32_MAX);
  case ValueType::INT64:
    return check_signed(v, where, INT64_MIN, INT64_MAX);
  case ValueType::FLOAT32:
  case ValueType::FLOAT64:
    return check_payload<double>(v, where);
  case ValueType::BOOL:
    return check_payload<bool>(v, where);
  case ValueType::STRING:
    return check_payload<std::string>(v, where);
  case ValueType::ARRAY: {
    check_payload<Array>(v, where);
    if (depth + 1 > kMaxArrayDepth)
      bad(where, "arrays nested more than " + std::to_string(kMaxArrayDepth) + " levels deep");
    const Array &a = std::get<Array>(v.data);
    if (!is_known_value_type(static_cast<uint32_t>(a.element_type)))
      bad(where,
          "unknown array element type " + std::to_string(static_cast<uint32_t>(a.element_type)));
    for (size_t i = 0; i < a.items.size(); ++i) {
      const Value &item = a.items[i];
      if (item.type != a.element_type)
        bad(where, "array element " + std::to_string(i) + " is " +
                       std::string(value_type_name(item.type)) + ", the array holds " +
                       std::string(value_type_name(a.element_type)));
      check_value(item, where, depth + 1);
    }
    return;
  }
  }
  bad(where, "unknown value type " + std::to_string(static_cast<uint32_t>(v.type)));
}

} // namespace bonsai::gguf
