#pragma once
// A small JSON reader for test fixtures (golden *.json files). Test-only: it
// favours clear failures over speed. Numbers are kept as double (exact for
// integers up to 2^53, enough for token ids); \uXXXX escapes, surrogate pairs
// included, become UTF-8.
//
//   const mini_json::Value doc = mini_json::parse_file(path);
//   for (const auto &id : doc["tokens"].as_array()) ids.push_back(id.as_int());
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mini_json {

class Value {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Value() = default;
  static Value make_bool(bool b) {
    Value v;
    v.kind_ = Kind::Bool;
    v.bool_ = b;
    return v;
  }
  static Value make_number(double d) {
    Value v;
    v.kind_ = Kind::Number;
    v.number_ = d;
    return v;
  }
  static Value make_string(std::string s) {
    Value v;
    v.kind_ = Kind::String;
    v.string_ = std::move(s);
    return v;
  }
  static Value make_array(std::vector<Value> items) {
    Value v;
    v.kind_ = Kind::Array;
    v.array_ = std::move(items);
    return v;
  }
  static Value make_object(std::vector<std::pair<std::string, Value>> members) {
    Value v;
    v.kind_ = Kind::Object;
    v.object_ = std::move(members);
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }

  bool as_bool() const {
    expect(Kind::Bool, "a boolean");
    return bool_;
  }
  double as_number() const {
    expect(Kind::Number, "a number");
    return number_;
  }
  // Throws unless the number is an integer.
  int64_t as_int() const {
    const double d = as_number();
    if (d != std::floor(d) || std::fabs(d) > 9007199254740992.0)
      throw std::runtime_error("mini_json: " + std::to_string(d) + " is not an integer");
    return static_cast<int64_t>(d);
  }
  const std::string &as_string() const {
    expect(Kind::String, "a string");
    return string_;
  }
  const std::vector<Value> &as_array() const {
    expect(Kind::Array, "an array");
    return array_;
  }
  // Members in file order.
  const std::vector<std::pair<std::string, Value>> &as_object() const {
    expect(Kind::Object, "an object");
    return object_;
  }

  bool contains(std::string_view key) const { return find(key) != nullptr; }
  const Value *find(std::string_view key) const {
    for (const auto &[k, v] : as_object())
      if (k == key)
        return &v;
    return nullptr;
  }
  // Object member; throws when absent.
  const Value &operator[](std::string_view key) const {
    if (const Value *v = find(key))
      return *v;
    throw std::runtime_error("mini_json: missing key '" + std::string(key) + "'");
  }
  // Array element; throws when out of range.
  const Value &operator[](size_t index) const {
    const auto &items = as_array();
    if (index >= items.size())
      throw std::runtime_error("mini_json: index " + std::to_string(index) + " out of range");
    return items[index];
  }
  size_t size() const { return kind_ == Kind::Object ? object_.size() : as_array().size(); }

  // Convenience for the common "array of integers" fixture field.
  template <typename Int> std::vector<Int> as_int_vector() const {
    std::vector<Int> out;
    for (const Value &v : as_array())
      out.push_back(static_cast<Int>(v.as_int()));
    return out;
  }

private:
  void expect(Kind k, const char *what) const {
    if (kind_ != k)
      throw std::runtime_error(std::string("mini_json: value is not ") + what);
  }

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Value> array_;
  std::vector<std::pair<std::string, Value>> object_;
};

namespace detail {

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Value parse_document() {
    Value v = parse_value(0);
    skip_space();
    if (pos_ != text_.size())
      fail("trailing characters after the JSON value");
    return v;
  }

private:
  [[noreturn]] void fail(const std::string &what) const {
    throw std::runtime_error("mini_json: " + what + " at offset " + std::to_string(pos_));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  char peek() {
    skip_space();
    if (pos_ >= text_.size())
      fail("unexpected end of input");
    return text_[pos_];
  }

  void expect_literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      fail("invalid literal");
    pos_ += word.size();
  }

  Value parse_value(int depth) {
    if (depth > 256)
      fail("nesting too deep");
    switch (peek()) {
    case '{':
      return parse_object(depth);
    case '[':
      return parse_array(depth);
    case '"':
      return Value::make_string(parse_string());
    case 't':
      expect_literal("true");
      return Value::make_bool(true);
    case 'f':
      expect_literal("false");
      return Value::make_bool(false);
    case 'n':
      expect_literal("null");
      return Value();
    default:
      return parse_number();
    }
  }

  Value parse_object(int depth) {
    ++pos_; // '{'
    std::vector<std::pair<std::string, Value>> members;
    if (peek() == '}') {
      ++pos_;
      return Value::make_object(std::move(members));
    }
    for (;;) {
      if (peek() != '"')
        fail("expected a string key");
      std::string key = parse_string();
      if (peek() != ':')
        fail("expected ':'");
      ++pos_;
      Value v = parse_value(depth + 1);
      members.emplace_back(std::move(key), std::move(v));
      const char c = peek();
      ++pos_;
      if (c == '}')
        return Value::make_object(std::move(members));
      if (c != ',')
        fail("expected ',' or '}'");
    }
  }

  Value parse_array(int depth) {
    ++pos_; // '['
    std::vector<Value> items;
    if (peek() == ']') {
      ++pos_;
      return Value::make_array(std::move(items));
    }
    for (;;) {
      items.push_back(parse_value(depth + 1));
      const char c = peek();
      ++pos_;
      if (c == ']')
        return Value::make_array(std::move(items));
      if (c != ',')
        fail("expected ',' or ']'");
    }
  }

  Value parse_number() {
    const size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-')
      ++pos_;
    const auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
        ++pos_;
      return pos_ > from;
    };
    if (!digits())
      fail("invalid number");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (!digits())
        fail("invalid number");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      if (!digits())
        fail("invalid number");
    }
    std::istringstream in(std::string(text_.substr(start, pos_ - start)));
    in.imbue(std::locale::classic());
    double d = 0;
    in >> d;
    return Value::make_number(d);
  }

  unsigned parse_hex4() {
    if (pos_ + 4 > text_.size())
      fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<unsigned>(c - 'A' + 10);
      else
        fail("invalid hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(char32_t cp, std::string &out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string parse_string() {
    ++pos_; // opening quote
    std::string out;
    for (;;) {
      if (pos_ >= text_.size())
        fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        fail("control character in string");
      if (c != '\\') {
        out += c; // UTF-8 passes through unchanged
        continue;
      }
      if (pos_ >= text_.size())
        fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        char32_t cp = parse_hex4();
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text_.substr(pos_, 2) != "\\u")
            fail("unpaired high surrogate");
          pos_ += 2;
          const char32_t low = parse_hex4();
          if (low < 0xDC00 || low > 0xDFFF)
            fail("invalid low surrogate");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          fail("unpaired low surrogate");
        }
        append_utf8(cp, out);
        break;
      }
      default:
        fail("invalid escape");
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

} // namespace detail

inline Value parse(std::string_view text) {
  return detail::Parser(text).parse_document();
}

inline Value parse_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("mini_json: cannot open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  try {
    return parse(buffer.str());
  } catch (const std::runtime_error &e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

} // namespace mini_json
