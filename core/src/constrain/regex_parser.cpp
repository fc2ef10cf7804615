// Recursive descent over the pattern's code points.
#include "regex_parser.hpp"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace bonsai::constrain {
namespace {

constexpr int32_t kMaxRepeat = 1000;

[[noreturn]] void fail(const std::string &what) {
  throw std::invalid_argument("pattern: " + what);
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<uint8_t>(text[i]);
    const int len = lead < 0x80         ? 1
                    : (lead >> 5) == 6  ? 2
                    : (lead >> 4) == 14 ? 3
                    : (lead >> 3) == 30 ? 4
                                        : 0;
    if (len == 0 || i + static_cast<size_t>(len) > text.size())
      fail("invalid UTF-8");
    uint32_t cp = len == 1 ? lead : lead & (0x7Fu >> len);
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<uint8_t>(text[i + static_cast<size_t>(k)]);
      if ((b & 0xC0) != 0x80)
        fail("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3Fu);
    }
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return out;
}

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                       {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges kNotLineEnd = complement({{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}});

const char *kAnchorRule = "'^' and '$' are supported only at the start and the end of the pattern "
                          "or of one of its top-level alternatives ('$' also at the end of a "
                          "look-ahead)";

// Whether `ast` reads one character of at least the ranges of `.`.
bool any_char(const RegexAst &ast) {
  if (ast.kind != RegexAst::Kind::chars)
    return false;
  const RegexAst dot = chars_of(kNotLineEnd);
  return intersect(ast.ranges, dot.ranges) == dot.ranges;
}

class Parser {
public:
  Parser(std::vector<uint32_t> text, bool count_lengths)
      : s_(std::move(text)), count_lengths_(count_lengths) {}

  ParsedPattern whole() {
    std::vector<RegexAst> branches;
    do
      branches.push_back(top_branch());
    while (eat('|'));
    if (more())
      fail(fmt::format("unmatched ')' at offset {}", pos_));
    ParsedPattern out;
    out.ast = alt_of(std::move(branches));
    out.min_chars = min_chars_;
    out.max_chars = max_chars_;
    return out;
  }
  bool counted() const { return counted_; }

private:
  bool more() const { return pos_ < s_.size(); }
  uint32_t peek() const { return s_[pos_]; }
  bool eat(uint32_t c) {
    if (more() && peek() == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // One top-level alternative with its anchors: an unanchored side matches
  // any text.
  RegexAst top_branch() {
    const bool anchored_start = eat('^');
    at_start_ = anchored_start;
    bool anchored_end = false;
    RegexAst body = concatenation(&anchored_end);
    at_start_ = false;
    std::vector<RegexAst> parts;
    if (!anchored_start)
      parts.push_back(any_text());
    parts.push_back(std::move(body));
    if (!anchored_end)
      parts.push_back(any_text());
    return concat_of(std::move(parts));
  }

  RegexAst alternation() {
    std::vector<RegexAst> kids;
    kids.push_back(concatenation(nullptr));
    while (eat('|'))
      kids.push_back(concatenation(nullptr));
    return alt_of(std::move(kids));
  }

  // Items up to '|' or ')'. `end_anchor` (non-null at the top level and in
  // look-aheads) takes a final '$'.
  RegexAst concatenation(bool *end_anchor) {
    RegexAst seq;
    while (more() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && end_anchor != nullptr) {
        ++pos_;
        if (more() && peek() != '|' && peek() != ')')
          fail(kAnchorRule);
        *end_anchor = true;
        break;
      }
      RegexAst item = repetition();
      if (item.kind != RegexAst::Kind::lookahead)
        at_start_ = false;
      seq.kids.push_back(std::move(item));
    }
    return seq.kids.size() == 1 ? std::move(seq.kids[0]) : seq;
  }

  // {n}, {n,}, {n,m}; false (nothing consumed) when the brace is a literal.
  bool bounds(int32_t &min, int32_t &max) {
    const size_t start = pos_;
    auto number = [&](int32_t &out) {
      const size_t from = pos_;
      int64_t v = 0;
      while (more() && peek() >= '0' && peek() <= '9') {
        v = std::min<int64_t>(v * 10 + (peek() - '0'), INT32_MAX);
        ++pos_;
      }
      out = static_cast<int32_t>(v);
      return pos_ > from;
    };
    ++pos_; // '{'
    if (!number(min)) {
      pos_ = start;
      return false;
    }
    max = min;
    if (eat(',') && !number(max))
      max = -1;
    if (!eat('}')) {
      pos_ = start;
      return false;
    }
    if (max >= 0 && max < min)
      fail(fmt::format("the quantifier {{{},{}}} is out of order", min, max));
    if (min > kMaxRepeat || max > kMaxRepeat)
      fail(fmt::format("a repetition count above {} is not supported", kMaxRepeat));
    return true;
  }

  RegexAst repetition() {
    RegexAst atom_ast = atom();
    while (more()) {
      int32_t min = 0, max = -1;
      const uint32_t c = peek();
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        ++pos_;
        min = 1;
      } else if (c == '?') {
        ++pos_;
        max = 1;
      } else if (c == '{' && bounds(min, max)) {
      } else {
        break;
      }
      if (atom_ast.kind == RegexAst::Kind::lookahead)
        fail("a quantifier after a look-ahead");
      eat('?'); // a lazy quantifier matches the same language
      if (more() && (peek() == '*' || peek() == '+' || peek() == '?'))
        fail(fmt::format("nothing to repeat at offset {}", pos_));
      atom_ast = repeat_of(std::move(atom_ast), min, max);
    }
    return atom_ast;
  }

  // After "(?=" or "(?!": the language the rest of the text must (not)
  // start with. A '^' may open it only where nothing has been read yet.
  RegexAst lookahead(bool negated) {
    const bool at_start = at_start_;
    std::vector<RegexAst> branches;
    do {
      if (eat('^') && !at_start)
        fail(kAnchorRule);
      bool to_end = false;
      RegexAst body = concatenation(&to_end);
      std::vector<RegexAst> parts;
      parts.push_back(std::move(body));
      if (!to_end)
        parts.push_back(any_text());
      branches.push_back(concat_of(std::move(parts)));
    } while (eat('|'));
    at_start_ = at_start;
    RegexAst a;
    a.kind = RegexAst::Kind::lookahead;
    a.negated = negated;
    if (count_lengths_ && at_start && !negated && branches.size() == 1 &&
        counts_length(branches[0])) {
      // What is left of it: no line terminator anywhere (what '.' reads).
      counted_ = true;
      a.kids.push_back(repeat_of(chars_of(kNotLineEnd), 0, -1));
      return a;
    }
    a.kids.push_back(alt_of(std::move(branches)));
    return a;
  }

  // A look-ahead body ".{m,n}" (a class of at least '.'), maybe with one
  // optional character after it, read to the end: strings of m..n
  // characters without line terminators match it (a few longer ones too,
  // which are left out).
  bool counts_length(const RegexAst &body) {
    const RegexAst *run = &body;
    if (body.kind == RegexAst::Kind::concat && body.kids.size() == 2 &&
        body.kids[1].kind == RegexAst::Kind::repeat && body.kids[1].min == 0 &&
        body.kids[1].max == 1 && body.kids[1].kids[0].kind == RegexAst::Kind::chars)
      run = &body.kids[0];
    if (run->kind != RegexAst::Kind::repeat || !any_char(run->kids[0]))
      return false;
    min_chars_ = std::max(min_chars_, run->min);
    if (run->max >= 0)
      max_chars_ = max_chars_ < 0 ? run->max : std::min(max_chars_, run->max);
    return true;
  }

  RegexAst group() {
    if (eat('?')) {
      if (eat(':')) {
      } else if (eat('=') || (more() && peek() == '!')) {
        const bool negated = eat('!');
        RegexAst a = lookahead(negated);
        if (!eat(')'))
          fail("a '(' without its ')'");
        return a;
      } else if (more() && peek() == '<' && pos_ + 1 < s_.size() &&
                 (s_[pos_ + 1] == '=' || s_[pos_ + 1] == '!')) {
        fail("look-behind groups ((?<=, (?<!) are not supported");
      } else if (eat('<')) {
        while (more() && peek() != '>')
          ++pos_; // a named group: the name does not matter here
        if (!eat('>'))
          fail("an unterminated group name");
      } else {
        fail("an unknown group '(?'");
      }
    }
    const bool at_start = at_start_;
    at_start_ = false; // a '^' inside a group is not at the start
    RegexAst inner = alternation();
    at_start_ = at_start;
    if (!eat(')'))
      fail("a '(' without its ')'");
    return inner;
  }

  RegexAst atom() {
    const uint32_t c = s_[pos_++];
    switch (c) {
    case '(':
      return group();
    case '[':
      return chars_of(char_class());
    case '.':
      return chars_of(kNotLineEnd);
    case '^':
    case '$':
      fail(kAnchorRule);
    case '*':
    case '+':
    case '?':
      fail(fmt::format("nothing to repeat at offset {}", pos_ - 1));
    case '\\':
      return chars_of(escape(false));
    default:
      return chars_of({{c, c}});
    }
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (!more())
        fail("a truncated hex escape");
      const uint32_t d = peek();
      const int value = d >= '0' && d <= '9'   ? static_cast<int>(d - '0')
                        : d >= 'a' && d <= 'f' ? static_cast<int>(d - 'a' + 10)
                        : d >= 'A' && d <= 'F' ? static_cast<int>(d - 'A' + 10)
                                               : -1;
      if (value < 0)
        fail("a malformed hex escape");
      v = v * 16 + static_cast<uint32_t>(value);
      ++pos_;
    }
    return v;
  }

  // \uXXXX (a surrogate pair of two such escapes is one code point) or
  // \u{X...}.
  uint32_t unicode_escape() {
    if (eat('{')) {
      uint32_t v = 0;
      int digits = 0;
      while (more() && peek() != '}') {
        v = v * 16 + hex(1);
        if (++digits > 6 || v > kMaxCodepoint)
          fail("a \\u{...} escape past U+10FFFF");
      }
      if (!eat('}') || digits == 0)
        fail("a malformed \\u{...} escape");
      return v;
    }
    const uint32_t v = hex(4);
    if (v >= 0xD800 && v <= 0xDBFF && pos_ + 6 <= s_.size() && s_[pos_] == '\\' &&
        s_[pos_ + 1] == 'u') {
      const size_t back = pos_;
      pos_ += 2;
      const uint32_t low = hex(4);
      if (low >= 0xDC00 && low <= 0xDFFF)
        return 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
      pos_ = back;
    }
    return v;
  }

  // After a backslash. In a class, \b is a backspace.
  Ranges escape(bool in_class) {
    if (!more())
      fail("a pattern ending in '\\'");
    const uint32_t c = s_[pos_++];
    auto one = [](uint32_t v) { return Ranges{{v, v}}; };
    switch (c) {
    case 'd':
      return kDigit;
    case 'D':
      return complement(kDigit);
    case 'w':
      return kWord;
    case 'W':
      return complement(kWord);
    case 's':
      return kSpace;
    case 'S':
      return complement(normalize(kSpace));
    case 'n':
      return one('\n');
    case 'r':
      return one('\r');
    case 't':
      return one('\t');
    case 'f':
      return one('\f');
    case 'v':
      return one('\v');
    case '0':
      return one(0);
    case 'x':
      return one(hex(2));
    case 'u':
      return one(unicode_escape());
    case 'c':
      if (more() && ((peek() >= 'a' && peek() <= 'z') || (peek() >= 'A' && peek() <= 'Z')))
        return one(s_[pos_++] % 32);
      fail("a '\\c' without a letter");
    case 'b':
      if (in_class)
        return one('\b');
      fail("word boundaries (\\b, \\B) are not supported");
    case 'B':
      fail("word boundaries (\\b, \\B) are not supported");
    case 'p':
    case 'P':
      fail("Unicode property classes (\\p, \\P) are not supported");
    case 'k':
      fail("back-references are not supported");
    default:
      if (c >= '1' && c <= '9')
        fail("back-references are not supported");
      return one(c); // an identity escape: \. \\ \/ \- ...
    }
  }

  Ranges char_class() {
    const bool negated = eat('^');
    Ranges out;
    while (true) {
      if (!more())
        fail("a '[' without its ']'");
      if (eat(']'))
        break;
      Ranges item;
      if (eat('\\')) {
        item = escape(true);
      } else {
        const uint32_t lo = s_[pos_++];
        item = {{lo, lo}};
      }
      // A range a-b needs single characters on both sides.
      if (item.size() == 1 && item[0].lo == item[0].hi && pos_ + 1 < s_.size() && peek() == '-' &&
          s_[pos_ + 1] != ']') {
        ++pos_;
        Ranges upper;
        if (eat('\\'))
          upper = escape(true);
        else
          upper = {{s_[pos_], s_[pos_]}}, ++pos_;
        if (upper.size() != 1 || upper[0].lo != upper[0].hi)
          fail("a class range with a class escape as its end");
        if (upper[0].lo < item[0].lo)
          fail("a class range out of order");
        item = {{item[0].lo, upper[0].lo}};
      }
      out.insert(out.end(), item.begin(), item.end());
    }
    out = normalize(out);
    return negated ? complement(out) : out;
  }

  std::vector<uint32_t> s_;
  size_t pos_ = 0;
  // Take leading look-aheads that only count characters as a length
  // (counted_ when one was): right when the pattern has one alternative.
  bool count_lengths_ = false, counted_ = false;
  int32_t min_chars_ = 0, max_chars_ = -1;
  // Nothing but look-aheads read yet in a top-level alternative that starts
  // with '^' (a look-ahead's own '^' holds there).
  bool at_start_ = false;
};

} // namespace

ParsedPattern parse_pattern(std::string_view pattern) {
  Parser counting(decode_utf8(pattern), true);
  ParsedPattern out = counting.whole();
  if (counting.counted() && out.ast.kind == RegexAst::Kind::alt)
    return Parser(decode_utf8(pattern), false).whole(); // the length would hold for all
  return out;
}

} // namespace bonsai::constrain
