// GrammarMatcher: feeds bytes to the terminals on top of its stacks and
// expands what follows a finished terminal (forking at alternatives,
// optional repeats and object members), in the style of a nondeterministic
// pushdown automaton. Every state it keeps can still be completed, so
// min_bytes_to_complete() is always finite.
#include <algorithm>

#include "bonsai/core/grammar.hpp"
#include "matcher_state.hpp"

namespace bonsai {
namespace {

using namespace constrain;

// Deeper stacks are refused: this bounds nesting in "any JSON" values.
constexpr size_t kMaxFrames = 256;
constexpr int32_t kMaxIntegerDigits = 16;
constexpr int32_t kMaxFractionDigits = 16;
// Two exponent digits keep every number inside a double's range, which most
// JSON parsers need (16 digits e99 is about 1e115).
constexpr int32_t kMaxExponentDigits = 2;

// Number phases.
enum : uint8_t {
  num_start,
  num_minus,
  num_zero,
  num_int,
  num_dot,
  num_frac,
  num_e,
  num_e_sign,
  num_exp
};

enum class Fed { dead, more, endable, finished };

bool is_terminal(NodeKind kind) {
  return kind == NodeKind::literal || kind == NodeKind::string || kind == NodeKind::number ||
         kind == NodeKind::ws || kind == NodeKind::until;
}

int32_t saturating_add(int32_t a, int32_t b) {
  return std::min<int64_t>(int64_t{a} + b, kUnreachable);
}

class Walker {
public:
  explicit Walker(const GrammarData &g) : g_(g) {}

  void push(Stack &st, int32_t node) const {
    st.frames.push_back({node, 0, 0});
    const Node &n = g_.nodes[static_cast<size_t>(node)];
    if (!is_terminal(n.kind))
      return;
    st.lex = Lexer{};
    if (n.kind == NodeKind::string) {
      st.lex.key_hi = static_cast<int32_t>(n.excluded.size());
      st.lex.key_depth = n.excluded.empty() ? -1 : 0;
    }
    if (n.automaton >= 0)
      st.lex.nfa = automaton(n).start();
  }

  // Brings `st` to stacks whose top is a terminal ready for a byte (or that
  // are empty: the reply is complete), appending them to `out`.
  void expand(Stack st, std::vector<Stack> &out) const {
    while (true) {
      if (st.frames.empty()) {
        out.push_back(std::move(st));
        return;
      }
      if (st.frames.size() > kMaxFrames)
        return;
      Frame &f = st.frames.back();
      const Node &n = g_.nodes[static_cast<size_t>(f.node)];
      switch (n.kind) {
      case NodeKind::literal:
        if (n.text.empty()) {
          st.frames.pop_back();
          continue;
        }
        out.push_back(std::move(st));
        return;
      case NodeKind::string:
      case NodeKind::number:
      case NodeKind::until:
        out.push_back(std::move(st));
        return;
      case NodeKind::ws:
        if (n.max > 0 && st.lex.count < n.max)
          out.push_back(st); // more whitespace may come
        st.frames.pop_back();
        continue;
      case NodeKind::seq:
        if (static_cast<size_t>(f.pos) < n.kids.size()) {
          const int32_t kid = n.kids[static_cast<size_t>(f.pos++)];
          push(st, kid);
        } else {
          st.frames.pop_back();
        }
        continue;
      case NodeKind::alt: {
        st.frames.pop_back();
        // Kids that cannot finish (a recursion without an end) are not entered.
        size_t last = n.kids.size();
        while (last > 0 && min_of(n.kids[last - 1]) >= kUnreachable)
          --last;
        if (last == 0)
          return;
        for (size_t k = 0; k + 1 < last; ++k) {
          if (min_of(n.kids[k]) >= kUnreachable)
            continue;
          Stack copy = st;
          push(copy, n.kids[k]);
          expand(std::move(copy), out);
        }
        push(st, n.kids[last - 1]);
        continue;
      }
      case NodeKind::repeat:
        expand_repeat(std::move(st), n, out);
        return;
      case NodeKind::object:
        expand_object(std::move(st), n, out);
        return;
      }
    }
  }

  // Feeds one byte to the terminal on top of `st`.
  Fed feed(Stack &st, uint8_t b) const {
    const Node &n = g_.nodes[static_cast<size_t>(st.frames.back().node)];
    Lexer &lx = st.lex;
    switch (n.kind) {
    case NodeKind::literal:
      if (static_cast<uint8_t>(n.text[static_cast<size_t>(lx.count)]) != b)
        return Fed::dead;
      return ++lx.count == static_cast<int32_t>(n.text.size()) ? Fed::finished : Fed::more;
    case NodeKind::ws:
      if ((b != ' ' && b != '\n' && b != '\t') || lx.count >= n.max)
        return Fed::dead;
      ++lx.count;
      return Fed::endable;
    case NodeKind::until:
      return feed_until(lx, n, b);
    case NodeKind::number:
      return n.automaton >= 0 ? feed_number_text(lx, n, b) : feed_number(lx, n, b);
    case NodeKind::string:
      return feed_string(lx, n, b);
    default:
      return Fed::dead;
    }
  }

  // Whether the terminal on top could take another byte.
  bool can_take_more(const Stack &st) const {
    const Node &n = g_.nodes[static_cast<size_t>(st.frames.back().node)];
    const Lexer &lx = st.lex;
    switch (n.kind) {
    case NodeKind::ws:
      return lx.count < n.max;
    case NodeKind::number:
      if (n.automaton >= 0)
        return automaton(n).can_step(lx.nfa, lx.chars);
      switch (lx.phase) {
      case num_zero:
        return !n.integer;
      case num_int:
        return lx.count < kMaxIntegerDigits || !n.integer;
      case num_exp:
        return lx.count < kMaxExponentDigits;
      default:
        return true;
      }
    default:
      return true;
    }
  }

  // Fewest bytes that finish the stack.
  int32_t remaining(const Stack &st) const {
    if (st.frames.empty())
      return 0;
    int32_t total = terminal_remaining(st);
    for (size_t i = 0; i + 1 < st.frames.size(); ++i)
      total = saturating_add(total, frame_remaining(st.frames[i]));
    return total;
  }

private:
  int32_t min_of(int32_t node) const { return g_.min_bytes[static_cast<size_t>(node)]; }
  const Automaton &automaton(const Node &n) const {
    return g_.automata[static_cast<size_t>(n.automaton)];
  }

  void expand_repeat(Stack st, const Node &n, std::vector<Stack> &out) const {
    if (n.distinct) {
      expand_distinct(std::move(st), n, out);
      return;
    }
    Frame &f = st.frames.back();
    const int32_t item = n.kids[0], sep = n.kids.size() > 1 ? n.kids[1] : -1;
    if (f.aux == 1) {
      f.aux = 0;
      ++f.pos;
      push(st, item);
      expand(std::move(st), out);
      return;
    }
    const bool may_stop = f.pos >= n.min;
    const bool may_go = (n.max < 0 || f.pos < n.max) && min_of(item) < kUnreachable;
    if (may_go) {
      Stack more = may_stop ? st : std::move(st);
      Frame &g = more.frames.back();
      if (g.pos > 0 && sep >= 0) {
        g.aux = 1;
        push(more, sep);
      } else {
        ++g.pos;
        push(more, item);
      }
      expand(std::move(more), out);
    }
    if (may_stop) {
      st.frames.pop_back();
      expand(std::move(st), out);
    }
  }

  // A repeat whose items are distinct choices: each comes at most once
  // (uniqueItems); the frame's mask holds those taken.
  void expand_distinct(Stack st, const Node &n, std::vector<Stack> &out) const {
    const Frame f = st.frames.back();
    const std::vector<int32_t> &choices = g_.nodes[static_cast<size_t>(n.kids[0])].kids;
    const int32_t sep = n.kids.size() > 1 ? n.kids[1] : -1;
    auto each_choice = [&](Stack base) {
      for (size_t c = 0; c < choices.size(); ++c) {
        if (f.mask >> c & 1)
          continue;
        Stack copy = base;
        Frame &g = copy.frames.back();
        g.aux = 0;
        ++g.pos;
        g.mask |= uint64_t{1} << c;
        push(copy, choices[c]);
        expand(std::move(copy), out);
      }
    };
    if (f.aux == 1) {
      each_choice(std::move(st));
      return;
    }
    const bool may_stop = f.pos >= n.min, may_go = f.pos < n.max;
    if (may_go) {
      if (f.pos > 0 && sep >= 0) {
        Stack more = st;
        more.frames.back().aux = 1;
        push(more, sep);
        expand(std::move(more), out);
      } else {
        each_choice(st);
      }
    }
    if (may_stop) {
      st.frames.pop_back();
      expand(std::move(st), out);
    }
  }

  // Members whose presence the begun ones ask for (dependentRequired).
  static uint64_t needed_by_begun(const Node &n, const Frame &f) {
    uint64_t needed = 0;
    for (uint64_t bits = f.mask; bits != 0; bits &= bits - 1)
      needed |= n.members[static_cast<size_t>(__builtin_ctzll(bits))].needs;
    return needed;
  }

  static bool must_come(const Node &n, uint64_t needed, size_t j) {
    return n.members[j].required || (j < 64 && (needed >> j & 1));
  }

  // Distinct names among the members begun: further (additional) members
  // could repeat a name, so they count once.
  static int32_t distinct_members(const Frame &f) { return f.aux - f.extra + std::min(f.extra, 1); }

  void expand_object(Stack st, const Node &n, std::vector<Stack> &out) const {
    const Frame f = st.frames.back();
    const auto count = static_cast<int32_t>(n.members.size());
    const bool room = n.max < 0 || f.aux < n.max;
    const uint64_t needed = needed_by_begun(n, f);
    auto begin = [&](Frame g, int32_t member) {
      if (frame_remaining(g) >= kUnreachable)
        return; // it would leave the object unfinishable (minProperties, maxProperties)
      Stack copy = st;
      copy.frames.back() = g;
      push(copy, member);
      expand(std::move(copy), out);
    };
    bool rest_optional = true;
    for (int32_t j = f.pos; j < count; ++j) {
      const ObjectMember &m = n.members[static_cast<size_t>(j)];
      const uint64_t below = j < 64 ? (uint64_t{1} << j) - 1 : ~uint64_t{0};
      // Its needs that come earlier must have been written.
      if (room && min_of(m.first) < kUnreachable && (m.needs & below & ~f.mask) == 0)
        begin({f.node, j + 1, f.aux + 1, f.extra, f.mask | (j < 64 ? uint64_t{1} << j : 0)},
              f.aux ? m.next : m.first);
      if (must_come(n, needed, static_cast<size_t>(j))) {
        rest_optional = false;
        break;
      }
    }
    if (!rest_optional)
      return;
    if (n.additional.first >= 0 && room && min_of(n.additional.first) < kUnreachable)
      begin({f.node, count, f.aux + 1, f.extra + 1, f.mask},
            f.aux ? n.additional.next : n.additional.first);
    if (distinct_members(f) >= n.min) {
      st.frames.pop_back();
      push(st, n.close);
      expand(std::move(st), out);
    }
  }

  // A number whose text follows an automaton (bounds, multipleOf).
  Fed feed_number_text(Lexer &lx, const Node &n, uint8_t b) const {
    if (b >= 0x80)
      return Fed::dead;
    const Automaton &a = automaton(n);
    NfaSet next = a.step(lx.nfa, b, lx.chars);
    if (next.empty())
      return Fed::dead;
    lx.nfa = std::move(next);
    ++lx.chars;
    return a.accepts(lx.nfa, lx.chars) ? Fed::endable : Fed::more;
  }

  static Fed feed_until(Lexer &lx, const Node &n, uint8_t b) {
    const std::string &t = n.text;
    if (static_cast<uint8_t>(t[static_cast<size_t>(lx.count)]) == b)
      return ++lx.count == static_cast<int32_t>(t.size()) ? Fed::finished : Fed::more;
    // The longest prefix of the terminator that ends the text read so far.
    std::string seen = t.substr(0, static_cast<size_t>(lx.count));
    seen.push_back(static_cast<char>(b));
    lx.count = 0;
    for (size_t k = std::min(seen.size(), t.size() - 1); k > 0; --k)
      if (seen.compare(seen.size() - k, k, t, 0, k) == 0) {
        lx.count = static_cast<int32_t>(k);
        break;
      }
    return Fed::more;
  }

  static Fed feed_number(Lexer &lx, const Node &n, uint8_t b) {
    const bool digit = b >= '0' && b <= '9';
    auto part = [&](uint8_t phase) {
      lx.phase = phase;
      lx.count = 1;
      return phase == num_frac || phase == num_exp ? Fed::endable : Fed::more;
    };
    switch (lx.phase) {
    case num_start:
      if (b == '-') {
        lx.phase = num_minus;
        return Fed::more;
      }
      [[fallthrough]];
    case num_minus:
      if (b == '0') {
        lx.phase = num_zero;
        return Fed::endable;
      }
      if (digit) {
        lx.phase = num_int;
        lx.count = 1;
        return Fed::endable;
      }
      return Fed::dead;
    case num_int:
      if (digit) {
        if (lx.count >= kMaxIntegerDigits)
          return Fed::dead;
        ++lx.count;
        return Fed::endable;
      }
      [[fallthrough]];
    case num_zero:
      if (n.integer)
        return Fed::dead;
      if (b == '.') {
        lx.phase = num_dot;
        return Fed::more;
      }
      if (b == 'e' || b == 'E') {
        lx.phase = num_e;
        return Fed::more;
      }
      return Fed::dead;
    case num_dot:
      return digit ? part(num_frac) : Fed::dead;
    case num_frac:
      if (digit) {
        if (lx.count >= kMaxFractionDigits)
          return Fed::dead;
        ++lx.count;
        return Fed::endable;
      }
      if (b == 'e' || b == 'E') {
        lx.phase = num_e;
        return Fed::more;
      }
      return Fed::dead;
    case num_e:
      if (b == '+' || b == '-') {
        lx.phase = num_e_sign;
        return Fed::more;
      }
      [[fallthrough]];
    case num_e_sign:
      return digit ? part(num_exp) : Fed::dead;
    case num_exp:
      if (!digit || lx.count >= kMaxExponentDigits)
        return Fed::dead;
      ++lx.count;
      return Fed::endable;
    }
    return Fed::dead;
  }

  // One more character of the string's value is complete.
  Fed add_char(Lexer &lx, const Node &n, uint32_t cp) const {
    if (n.automaton >= 0) {
      lx.nfa = automaton(n).step(lx.nfa, cp, lx.chars);
      if (lx.nfa.empty())
        return Fed::dead;
    }
    ++lx.chars;
    return Fed::more;
  }

  // Follows the value's bytes through the excluded names.
  static void track_key(Lexer &lx, const Node &n, uint8_t b) {
    if (lx.key_depth < 0)
      return;
    const auto depth = static_cast<size_t>(lx.key_depth);
    int32_t lo = lx.key_hi, hi = lx.key_lo;
    for (int32_t i = lx.key_lo; i < lx.key_hi; ++i) {
      const std::string &name = n.excluded[static_cast<size_t>(i)];
      if (name.size() > depth && static_cast<uint8_t>(name[depth]) == b) {
        lo = std::min(lo, i);
        hi = std::max(hi, i + 1);
      }
    }
    if (lo >= hi) {
      lx.key_depth = -1;
      return;
    }
    lx.key_lo = lo;
    lx.key_hi = hi;
    ++lx.key_depth;
  }

  static bool equals_excluded(const Lexer &lx, const Node &n) {
    if (lx.key_depth < 0)
      return false;
    for (int32_t i = lx.key_lo; i < lx.key_hi; ++i)
      if (n.excluded[static_cast<size_t>(i)].size() == static_cast<size_t>(lx.key_depth))
        return true;
    return false;
  }

  bool may_close(const Lexer &lx, const Node &n) const {
    return lx.chars >= n.min && (n.automaton < 0 || automaton(n).accepts(lx.nfa, lx.chars)) &&
           !equals_excluded(lx, n);
  }

  // A pattern must be able to read some character that starts with the
  // bytes read so far; otherwise the prefix would be a dead end.
  bool pattern_can_take(const Lexer &lx, const Node &n) const {
    return n.automaton < 0 || pattern_bytes_after_pending(lx, n) >= 0;
  }

  // Fewest bytes to a match once the character being read is complete (its
  // own bytes not counted); -1: no character with these first bytes fits.
  int32_t pattern_bytes_after_pending(const Lexer &lx, const Node &n) const {
    const int shift = 6 * lx.utf8_left;
    const int length = lx.lead >= 0xF0 ? 4 : lx.lead >= 0xE0 ? 3 : 2;
    const uint32_t smallest = length == 4 ? 0x10000 : length == 3 ? 0x800 : 0x80;
    const uint32_t lo = std::max(lx.cp << shift, smallest);
    const uint32_t hi = std::min((lx.cp << shift) | ((1u << shift) - 1), 0x10FFFFu);
    if (lo > hi)
      return -1;
    return automaton(n).min_bytes_after_step_within(lx.nfa, lo, hi, lx.chars);
  }

  Fed feed_string(Lexer &lx, const Node &n, uint8_t b) const {
    if (lx.phase == 0) {
      if (b != '"')
        return Fed::dead;
      lx.phase = 1;
      return Fed::more;
    }
    if (lx.phase == 2) { // after a backslash
      static constexpr std::string_view kEscapes = "\"\\/nrt";
      if (kEscapes.find(static_cast<char>(b)) == std::string_view::npos)
        return Fed::dead;
      lx.phase = 1;
      if (b == '/')
        track_key(lx, n, '/');
      else
        lx.key_depth = -1; // names never hold what these decode to
      return add_char(lx, n, b);
    }
    if (lx.utf8_left > 0) {
      if ((b & 0xC0) != 0x80)
        return Fed::dead;
      // The first continuation byte rules out overlong forms, surrogates
      // and code points past U+10FFFF, so that no accepted prefix is a dead
      // end.
      const int expected = lx.lead >= 0xF0 ? 3 : lx.lead >= 0xE0 ? 2 : 1;
      if (lx.utf8_left == expected &&
          ((lx.lead == 0xE0 && b < 0xA0) || (lx.lead == 0xED && b > 0x9F) ||
           (lx.lead == 0xF0 && b < 0x90) || (lx.lead == 0xF4 && b > 0x8F)))
        return Fed::dead;
      lx.cp = lx.cp << 6 | (b & 0x3Fu);
      track_key(lx, n, b);
      if (--lx.utf8_left > 0)
        return pattern_can_take(lx, n) ? Fed::more : Fed::dead;
      return add_char(lx, n, lx.cp);
    }
    if (b == '"')
      return may_close(lx, n) ? Fed::finished : Fed::dead;
    if (n.max >= 0 && lx.chars >= n.max)
      return Fed::dead;
    if (b == '\\') {
      if (n.automaton >= 0)
        return Fed::dead; // patterned strings are written without escapes
      lx.phase = 2;
      return Fed::more;
    }
    if (b < 0x20)
      return Fed::dead;
    if (b < 0x80) {
      track_key(lx, n, b);
      return add_char(lx, n, b);
    }
    if (b < 0xC2 || b > 0xF4)
      return Fed::dead;
    lx.lead = b;
    lx.cp = b & (b >= 0xF0 ? 0x07u : b >= 0xE0 ? 0x0Fu : 0x1Fu);
    lx.utf8_left = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1;
    track_key(lx, n, b);
    return pattern_can_take(lx, n) ? Fed::more : Fed::dead;
  }

  int32_t terminal_remaining(const Stack &st) const {
    const Node &n = g_.nodes[static_cast<size_t>(st.frames.back().node)];
    const Lexer &lx = st.lex;
    switch (n.kind) {
    case NodeKind::literal:
    case NodeKind::until:
      return static_cast<int32_t>(n.text.size()) - lx.count;
    case NodeKind::ws:
      return 0;
    case NodeKind::number:
      if (n.automaton >= 0)
        return automaton(n).min_bytes_to_match(lx.nfa, lx.chars);
      return lx.phase == num_zero || lx.phase == num_int || lx.phase == num_frac ||
                     lx.phase == num_exp
                 ? 0
                 : 1;
    case NodeKind::string: {
      int32_t pending = lx.phase == 0 ? 1 : lx.phase == 2 ? 1 : lx.utf8_left;
      int32_t chars = std::max(0, n.min - lx.chars - (lx.phase == 2 || lx.utf8_left > 0 ? 1 : 0));
      // The automaton knows the lengths too.
      if (n.automaton >= 0 && lx.utf8_left > 0)
        chars = pattern_bytes_after_pending(lx, n);
      else if (n.automaton >= 0)
        chars = automaton(n).min_bytes_to_match(lx.nfa, lx.chars);
      else if (chars == 0 && lx.phase == 1 && lx.utf8_left == 0 && equals_excluded(lx, n))
        chars = 1;
      return pending + chars + 1;
    }
    default:
      return 0;
    }
  }

  int32_t frame_remaining(const Frame &f) const {
    const Node &n = g_.nodes[static_cast<size_t>(f.node)];
    switch (n.kind) {
    case NodeKind::seq: {
      int32_t total = 0;
      for (size_t k = static_cast<size_t>(f.pos); k < n.kids.size(); ++k)
        total = saturating_add(total, min_of(n.kids[k]));
      return total;
    }
    case NodeKind::repeat: {
      if (n.distinct)
        return distinct_remaining(f, n);
      const int32_t item = min_of(n.kids[0]);
      const int32_t sep = n.kids.size() > 1 && n.kids[1] >= 0 ? min_of(n.kids[1]) : 0;
      const int32_t more = std::max(0, n.min - f.pos - f.aux);
      const int64_t total = (f.aux ? int64_t{item} : 0) + int64_t{more} * (int64_t{sep} + item);
      return static_cast<int32_t>(std::min<int64_t>(total, kUnreachable));
    }
    case NodeKind::object:
      return object_remaining(f, n);
    default:
      return 0;
    }
  }

  // The cheapest choices not taken yet, as many as the items still owed.
  int32_t distinct_remaining(const Frame &f, const Node &n) const {
    const std::vector<int32_t> &choices = g_.nodes[static_cast<size_t>(n.kids[0])].kids;
    const int32_t sep = n.kids.size() > 1 && n.kids[1] >= 0 ? min_of(n.kids[1]) : 0;
    const int32_t more = std::max(0, n.min - f.pos - f.aux);
    const int32_t items = f.aux + more;
    if (items == 0)
      return 0;
    std::vector<int32_t> costs;
    for (size_t c = 0; c < choices.size(); ++c)
      if (!(f.mask >> c & 1))
        costs.push_back(min_of(choices[c]));
    if (costs.size() < static_cast<size_t>(items))
      return kUnreachable;
    std::partial_sort(costs.begin(), costs.begin() + items, costs.end());
    int64_t total = int64_t{more} * sep;
    for (int32_t i = 0; i < items; ++i)
      total += costs[static_cast<size_t>(i)];
    return static_cast<int32_t>(std::min<int64_t>(total, kUnreachable));
  }

  // After the member being read (or from the object's start): the members
  // that must come, then the cheapest optional ones minProperties still
  // asks for, within maxProperties, then the close.
  int32_t object_remaining(const Frame &f, const Node &n) const {
    const uint64_t needed = needed_by_begun(n, f);
    int64_t total = min_of(n.close);
    int32_t written = f.aux, counted = distinct_members(f), forced = 0;
    std::vector<int32_t> optional;
    for (size_t j = static_cast<size_t>(f.pos); j < n.members.size(); ++j) {
      const int32_t cost = saturating_add(min_of(n.members[j].first), 1); // with its comma
      if (must_come(n, needed, j)) {
        total += cost;
        ++forced;
      } else if (n.min > 0) {
        optional.push_back(cost);
      }
    }
    written += forced;
    counted += forced;
    if (counted < n.min) {
      if (n.additional.first >= 0 && f.extra == 0)
        optional.push_back(saturating_add(min_of(n.additional.first), 1));
      const auto missing = static_cast<size_t>(n.min - counted);
      if (optional.size() < missing)
        return kUnreachable;
      std::partial_sort(optional.begin(), optional.begin() + static_cast<ptrdiff_t>(missing),
                        optional.end());
      for (size_t i = 0; i < missing; ++i)
        total += optional[i];
      written += static_cast<int32_t>(missing);
    }
    if (n.max >= 0 && written > n.max)
      return kUnreachable;
    if (f.aux == 0 && written > 0)
      --total; // the first member has no comma
    return static_cast<int32_t>(std::min<int64_t>(total, kUnreachable));
  }

  const GrammarData &g_;
};

void dedupe(std::vector<Stack> &stacks) {
  std::vector<Stack> unique;
  unique.reserve(stacks.size());
  for (auto &s : stacks)
    if (std::find(unique.begin(), unique.end(), s) == unique.end())
      unique.push_back(std::move(s));
  stacks = std::move(unique);
}

} // namespace

GrammarMatcher::GrammarMatcher(Grammar grammar)
    : grammar_(std::move(grammar)), state_(std::make_unique<State>()) {
  Stack start;
  const Walker walker(grammar_.data());
  walker.push(start, grammar_.data().root);
  walker.expand(std::move(start), state_->stacks);
  dedupe(state_->stacks);
}

GrammarMatcher::GrammarMatcher(const GrammarMatcher &other)
    : grammar_(other.grammar_), state_(std::make_unique<State>(*other.state_)) {}

GrammarMatcher &GrammarMatcher::operator=(const GrammarMatcher &other) {
  if (this != &other) {
    if (&grammar_.data() != &other.grammar_.data())
      grammar_ = other.grammar_;
    *state_ = *other.state_; // reuses the vectors' storage
  }
  return *this;
}

GrammarMatcher::~GrammarMatcher() = default;

bool GrammarMatcher::advance(std::string_view bytes) {
  const Walker walker(grammar_.data());
  std::vector<Stack> &next = state_->scratch;
  for (const char c : bytes) {
    next.clear();
    for (Stack &st : state_->stacks) {
      if (st.frames.empty())
        continue;
      switch (walker.feed(st, static_cast<uint8_t>(c))) {
      case Fed::dead:
        break;
      case Fed::more:
        next.push_back(std::move(st));
        break;
      case Fed::endable: {
        Stack ended = st;
        if (walker.can_take_more(st))
          next.push_back(std::move(st));
        ended.frames.pop_back();
        walker.expand(std::move(ended), next);
        break;
      }
      case Fed::finished:
        st.frames.pop_back();
        walker.expand(std::move(st), next);
        break;
      }
    }
    if (next.empty())
      return false;
    if (next.size() > 1)
      dedupe(next);
    std::swap(state_->stacks, next);
  }
  return true;
}

bool GrammarMatcher::complete() const {
  return std::any_of(state_->stacks.begin(), state_->stacks.end(),
                     [](const Stack &s) { return s.frames.empty(); });
}

bool GrammarMatcher::can_continue() const {
  return std::any_of(state_->stacks.begin(), state_->stacks.end(),
                     [](const Stack &s) { return !s.frames.empty(); });
}

int32_t GrammarMatcher::min_bytes_to_complete() const {
  const Walker walker(grammar_.data());
  int32_t best = kUnreachable;
  for (const Stack &st : state_->stacks)
    best = std::min(best, walker.remaining(st));
  return best;
}

} // namespace bonsai
