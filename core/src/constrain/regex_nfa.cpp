// Pattern parser (recursive descent into a small syntax tree) and the
// Thompson construction that turns the tree into NFA states.
#include "regex_nfa.hpp"

#include <algorithm>
#include <queue>
#include <stdexcept>

#include <fmt/format.h>

namespace bonsai::constrain {
namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr int32_t kMaxRepeat = 1000;

using Ranges = std::vector<CodepointRange>;

[[noreturn]] void fail(const std::string &what) {
  throw std::invalid_argument("pattern: " + what);
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<uint8_t>(text[i]);
    int len = lead < 0x80         ? 1
              : (lead >> 5) == 6  ? 2
              : (lead >> 4) == 14 ? 3
              : (lead >> 3) == 30 ? 4
                                  : 0;
    if (len == 0 || i + len > text.size())
      fail("invalid UTF-8");
    uint32_t cp = len == 1 ? lead : lead & (0x7F >> len);
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<uint8_t>(text[i + k]);
      if ((b & 0xC0) != 0x80)
        fail("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

int utf8_length(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

Ranges normalize(Ranges r) {
  std::sort(r.begin(), r.end(), [](auto a, auto b) { return a.lo < b.lo; });
  Ranges out;
  for (const auto &x : r) {
    if (!out.empty() && x.lo <= out.back().hi + 1)
      out.back().hi = std::max(out.back().hi, x.hi);
    else
      out.push_back(x);
  }
  return out;
}

Ranges complement(const Ranges &sorted) {
  Ranges out;
  uint32_t next = 0;
  for (const auto &x : sorted) {
    if (x.lo > next)
      out.push_back({next, x.lo - 1});
    next = x.hi + 1;
  }
  if (next <= kMaxCodepoint)
    out.push_back({next, kMaxCodepoint});
  return out;
}

// What a JSON string can hold without an escape, in valid UTF-8.
const Ranges kJsonPlain = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, kMaxCodepoint}};

Ranges intersect(const Ranges &a, const Ranges &b) {
  Ranges out;
  for (const auto &x : a)
    for (const auto &y : b) {
      const uint32_t lo = std::max(x.lo, y.lo), hi = std::min(x.hi, y.hi);
      if (lo <= hi)
        out.push_back({lo, hi});
    }
  return normalize(out);
}

struct Ast {
  enum class Kind { chars, concat, alt, repeat } kind = Kind::concat;
  Ranges ranges;
  std::vector<Ast> kids;
  int32_t min = 0, max = 0; // repeat; max -1: unbounded
};

Ast chars(Ranges r) {
  Ast a;
  a.kind = Ast::Kind::chars;
  a.ranges = intersect(normalize(std::move(r)), kJsonPlain);
  return a;
}

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                       {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges kNotLineEnd = complement({{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}});

class Parser {
public:
  explicit Parser(std::vector<uint32_t> text) : s_(std::move(text)) {}

  Ast parse() {
    Ast root = alternation();
    if (pos_ < s_.size())
      fail(fmt::format("unmatched ')' at offset {}", pos_));
    return root;
  }

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

  Ast alternation() {
    Ast alt;
    alt.kind = Ast::Kind::alt;
    alt.kids.push_back(concatenation());
    while (eat('|'))
      alt.kids.push_back(concatenation());
    return alt.kids.size() == 1 ? std::move(alt.kids[0]) : alt;
  }

  Ast concatenation() {
    Ast seq;
    while (more() && peek() != '|' && peek() != ')')
      seq.kids.push_back(repetition());
    return seq;
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
    if (eat(',')) {
      if (!number(max))
        max = -1;
    }
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

  Ast repetition() {
    Ast atom_ast = atom();
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
      eat('?'); // a lazy quantifier matches the same language
      if (more() && (peek() == '*' || peek() == '+' || peek() == '?'))
        fail(fmt::format("nothing to repeat at offset {}", pos_));
      Ast rep;
      rep.kind = Ast::Kind::repeat;
      rep.min = min;
      rep.max = max;
      rep.kids.push_back(std::move(atom_ast));
      atom_ast = std::move(rep);
    }
    return atom_ast;
  }

  Ast atom() {
    const uint32_t c = s_[pos_++];
    switch (c) {
    case '(': {
      if (eat('?')) {
        if (eat(':')) {
        } else if (more() && peek() == '<' && pos_ + 1 < s_.size() && s_[pos_ + 1] != '=' &&
                   s_[pos_ + 1] != '!') {
          while (more() && peek() != '>')
            ++pos_; // a named group: the name does not matter here
          if (!eat('>'))
            fail("an unterminated group name");
        } else {
          fail("look-around groups ((?=, (?!, (?<=, (?<!) are not supported");
        }
      }
      Ast inner = alternation();
      if (!eat(')'))
        fail("a '(' without its ')'");
      return inner;
    }
    case '[':
      return chars(char_class());
    case '.':
      return chars(kNotLineEnd);
    case '^':
    case '$':
      fail("'^' and '$' are supported only at the start and the end of the pattern");
    case '*':
    case '+':
    case '?':
      fail(fmt::format("nothing to repeat at offset {}", pos_ - 1));
    case '\\':
      return chars(escape(false));
    default:
      return chars({{c, c}});
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
      return one(hex(4));
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
      uint32_t lo;
      Ranges item;
      if (eat('\\')) {
        item = escape(true);
      } else {
        lo = s_[pos_++];
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
};

class Builder {
public:
  Builder(std::vector<NfaState> &states, size_t max_states) : states_(states), max_(max_states) {}

  int32_t add(NfaState state) {
    if (states_.size() >= max_)
      fail(fmt::format("the pattern needs more than {} automaton states", max_));
    states_.push_back(std::move(state));
    return static_cast<int32_t>(states_.size() - 1);
  }

  // The entry state of `ast`, whose matches continue at `out`.
  int32_t build(const Ast &ast, int32_t out) {
    switch (ast.kind) {
    case Ast::Kind::chars: {
      NfaState s;
      s.ranges = ast.ranges;
      s.next = out;
      if (s.ranges.empty())
        s.ranges.push_back({1, 0}); // matches nothing; the distance pass drops it
      return add(std::move(s));
    }
    case Ast::Kind::concat:
      for (auto it = ast.kids.rbegin(); it != ast.kids.rend(); ++it)
        out = build(*it, out);
      return out;
    case Ast::Kind::alt: {
      NfaState split;
      for (const Ast &kid : ast.kids)
        split.epsilon.push_back(build(kid, out));
      return add(std::move(split));
    }
    case Ast::Kind::repeat: {
      const Ast &kid = ast.kids[0];
      int32_t cur = out;
      if (ast.max < 0) {
        const int32_t loop = add(NfaState{});
        const int32_t body = build(kid, loop);
        states_[static_cast<size_t>(loop)].epsilon = {body, out};
        cur = loop;
      } else {
        for (int32_t i = ast.min; i < ast.max; ++i) {
          NfaState split;
          split.epsilon = {build(kid, cur), out};
          cur = add(std::move(split));
        }
      }
      for (int32_t i = 0; i < ast.min; ++i)
        cur = build(kid, cur);
      return cur;
    }
    }
    return out;
  }

private:
  std::vector<NfaState> &states_;
  size_t max_;
};

bool in_ranges(const Ranges &ranges, uint32_t cp) {
  for (const auto &r : ranges)
    if (cp >= r.lo && cp <= r.hi)
      return true;
  return false;
}

} // namespace

RegexNfa::RegexNfa(std::string_view pattern, size_t max_states) {
  std::vector<uint32_t> cps = decode_utf8(pattern);
  const bool anchored_start = !cps.empty() && cps.front() == '^';
  if (anchored_start)
    cps.erase(cps.begin());
  size_t backslashes = 0;
  for (size_t i = cps.size() >= 1 ? cps.size() - 1 : 0; i-- > 0 && cps[i] == '\\';)
    ++backslashes;
  const bool anchored_end = !cps.empty() && cps.back() == '$' && backslashes % 2 == 0;
  if (anchored_end)
    cps.pop_back();
  Ast root = Parser(std::move(cps)).parse();
  if ((anchored_start || anchored_end) && root.kind == Ast::Kind::alt)
    fail("a top-level '|' beside '^' or '$': put the alternatives in a group");
  Ast any_run;
  any_run.kind = Ast::Kind::repeat;
  any_run.min = 0;
  any_run.max = -1;
  any_run.kids.push_back(chars({{0, kMaxCodepoint}}));
  Ast whole;
  if (!anchored_start)
    whole.kids.push_back(any_run);
  whole.kids.push_back(std::move(root));
  if (!anchored_end)
    whole.kids.push_back(any_run);

  Builder builder(states_, max_states);
  accept_ = builder.add(NfaState{});
  const int32_t entry = builder.build(whole, accept_);

  // Fewest bytes to accept_, by Dijkstra over the reversed edges.
  const size_t n = states_.size();
  std::vector<std::vector<std::pair<int32_t, int32_t>>> reverse(n);
  for (size_t i = 0; i < n; ++i) {
    const NfaState &s = states_[i];
    if (!s.ranges.empty() && s.ranges[0].lo <= s.ranges[0].hi)
      reverse[static_cast<size_t>(s.next)].push_back(
          {static_cast<int32_t>(i), utf8_length(s.ranges[0].lo)});
    for (const int32_t e : s.epsilon)
      reverse[static_cast<size_t>(e)].push_back({static_cast<int32_t>(i), 0});
  }
  distance_.assign(n, -1);
  using Item = std::pair<int32_t, int32_t>; // distance, state
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
  queue.push({0, accept_});
  while (!queue.empty()) {
    const auto [d, s] = queue.top();
    queue.pop();
    if (distance_[static_cast<size_t>(s)] >= 0)
      continue;
    distance_[static_cast<size_t>(s)] = d;
    for (const auto &[from, w] : reverse[static_cast<size_t>(s)])
      if (distance_[static_cast<size_t>(from)] < 0)
        queue.push({d + w, from});
  }
  start_.assign((n + 63) / 64, 0);
  if (distance_[static_cast<size_t>(entry)] < 0)
    fail("the pattern matches no string a JSON value can hold without escapes");
  start_[static_cast<size_t>(entry) / 64] |= uint64_t{1} << (entry % 64);
  close(start_);
}

void RegexNfa::close(NfaSet &set) const {
  std::vector<int32_t> work;
  for (size_t w = 0; w < set.size(); ++w)
    for (uint64_t bits = set[w]; bits != 0; bits &= bits - 1)
      work.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
  while (!work.empty()) {
    const int32_t s = work.back();
    work.pop_back();
    for (const int32_t e : states_[static_cast<size_t>(s)].epsilon) {
      uint64_t &word = set[static_cast<size_t>(e) / 64];
      const uint64_t bit = uint64_t{1} << (e % 64);
      if ((word & bit) == 0 && distance_[static_cast<size_t>(e)] >= 0) {
        word |= bit;
        work.push_back(e);
      }
    }
  }
}

NfaSet RegexNfa::step(const NfaSet &from, uint32_t cp) const {
  NfaSet next(from.size(), 0);
  bool any = false;
  for (size_t w = 0; w < from.size(); ++w)
    for (uint64_t bits = from[w]; bits != 0; bits &= bits - 1) {
      const NfaState &s = states_[w * 64 + static_cast<size_t>(__builtin_ctzll(bits))];
      if (s.ranges.empty() || !in_ranges(s.ranges, cp) ||
          distance_[static_cast<size_t>(s.next)] < 0)
        continue;
      next[static_cast<size_t>(s.next) / 64] |= uint64_t{1} << (s.next % 64);
      any = true;
    }
  if (!any)
    return {};
  close(next);
  return next;
}

bool RegexNfa::can_step_within(const NfaSet &set, uint32_t lo, uint32_t hi) const {
  return min_bytes_after_step_within(set, lo, hi) >= 0;
}

int32_t RegexNfa::min_bytes_after_step_within(const NfaSet &set, uint32_t lo, uint32_t hi) const {
  int32_t best = -1;
  for (size_t w = 0; w < set.size(); ++w)
    for (uint64_t bits = set[w]; bits != 0; bits &= bits - 1) {
      const NfaState &s = states_[w * 64 + static_cast<size_t>(__builtin_ctzll(bits))];
      if (s.ranges.empty())
        continue;
      const int32_t d = distance_[static_cast<size_t>(s.next)];
      if (d < 0 || (best >= 0 && d >= best))
        continue;
      for (const auto &r : s.ranges)
        if (r.lo <= hi && lo <= r.hi) {
          best = d;
          break;
        }
    }
  return best;
}

bool RegexNfa::accepts(const NfaSet &set) const {
  return !set.empty() && (set[static_cast<size_t>(accept_) / 64] >> (accept_ % 64) & 1) != 0;
}

int32_t RegexNfa::min_bytes_to_match(const NfaSet &set) const {
  int32_t best = -1;
  for (size_t w = 0; w < set.size(); ++w)
    for (uint64_t bits = set[w]; bits != 0; bits &= bits - 1) {
      const int32_t d = distance_[w * 64 + static_cast<size_t>(__builtin_ctzll(bits))];
      if (d >= 0 && (best < 0 || d < best))
        best = d;
    }
  return best;
}

} // namespace bonsai::constrain
