// Metadata value type names and the checked conversions of gguf::Value.
#include <cmath>
#include <limits>
#include <string>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"

namespace bonsai::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
  case ValueType::UINT8:
    return "uint8";
  case ValueType::INT8:
    return "int8";
  case ValueType::UINT16:
    return "uint16";
  case ValueType::INT16:
    return "int16";
  case ValueType::UINT32:
    return "uint32";
  case ValueType::INT32:
    return "int32";
  case ValueType::FLOAT32:
    return "float32";
  case ValueType::BOOL:
    return "bool";
  case ValueType::STRING:
    return "string";
  case ValueType::ARRAY:
    return "array";
  case ValueType::UINT64:
    return "uint64";
  case ValueType::INT64:
    return "int64";
  case ValueType::FLOAT64:
    return "float64";
  }
  return "unknown";
}

bool is_known_value_type(uint32_t id) {
  return id <= static_cast<uint32_t>(ValueType::FLOAT64);
}

bool Value::is_integer() const {
  return std::holds_alternative<uint64_t>(data) || std::holds_alternative<int64_t>(data);
}

bool Value::is_float() const {
  return std::holds_alternative<double>(data);
}

namespace {

[[noreturn]] void wrong_kind(std::string_view what, std::string_view expected, ValueType found) {
  throw Error(std::string(what) + ": expected " + std::string(expected) + ", found " +
              std::string(value_type_name(found)));
}

} // namespace

uint64_t Value::as_u64(std::string_view what) const {
  if (const auto *u = std::get_if<uint64_t>(&data))
    return *u;
  if (const auto *i = std::get_if<int64_t>(&data)) {
    if (*i < 0)
      throw Error(std::string(what) + ": value " + std::to_string(*i) +
                  " is negative, expected an unsigned integer");
    return static_cast<uint64_t>(*i);
  }
  wrong_kind(what, "an integer", type);
}

int64_t Value::as_i64(std::string_view what) const {
  if (const auto *i = std::get_if<int64_t>(&data))
    return *i;
  if (const auto *u = std::get_if<uint64_t>(&data)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw Error(std::string(what) + ": value " + std::to_string(*u) +
                  " does not fit in a signed 64-bit integer");
    return static_cast<int64_t>(*u);
  }
  wrong_kind(what, "an integer", type);
}

double Value::as_f64(std::string_view what) const {
  if (const auto *d = std::get_if<double>(&data))
    return *d;
  if (const auto *u = std::get_if<uint64_t>(&data))
    return static_cast<double>(*u);
  if (const auto *i = std::get_if<int64_t>(&data))
    return static_cast<double>(*i);
  wrong_kind(what, "a number", type);
}

bool Value::as_bool(std::string_view what) const {
  if (const auto *b = std::get_if<bool>(&data))
    return *b;
  wrong_kind(what, "a bool", type);
}

const std::string &Value::as_string(std::string_view what) const {
  if (const auto *s = std::get_if<std::string>(&data))
    return *s;
  wrong_kind(what, "a string", type);
}

const Array &Value::as_array(std::string_view what) const {
  if (const auto *a = std::get_if<Array>(&data))
    return *a;
  wrong_kind(what, "an array", type);
}

} // namespace bonsai::gguf
