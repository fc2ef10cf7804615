#pragma once
// JSON Schema `format`s as regular languages. Each is a subset of what the
// format's RFC allows and of what the reference validators (ajv-formats in
// full mode) accept: calendar dates with month lengths and leap years, times
// with seconds and a zone, canonical lower-case UUIDs, dot-atom e-mail
// addresses, and so on.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::constrain {

struct StringFormat {
  std::string pattern;    // anchored ECMA-262 pattern; empty: any string
  int32_t max_chars = -1; // a length the format itself limits (hostname: 253)
};

// The language of a string format, or nullopt when bonsai does not know
// the name.
std::optional<StringFormat> string_format(std::string_view name);
// The formats string_format() knows, for messages and documentation.
const std::vector<std::string> &known_string_formats();

// A number format (int32, int64, float, double): whether it asks for an
// integer, and the bounds it sets.
struct NumberFormat {
  bool integer = false;
  bool bounded = false;
  int64_t min = 0, max = 0;
};
std::optional<NumberFormat> number_format(std::string_view name);

} // namespace bonsai::constrain
