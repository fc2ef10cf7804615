// State-set stepping and the tables of fewest bytes to an accepted end.
#include "automaton.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <queue>
#include <stdexcept>

#include <fmt/format.h>

namespace bonsai::constrain {
namespace {

constexpr int32_t kNever = std::numeric_limits<int32_t>::max() / 4;

int32_t move_bytes(const NfaMove &m) {
  return utf8_length(m.ranges.front().lo);
}

template <typename F> void for_each_state(const NfaSet &set, F &&f) {
  for (size_t w = 0; w < set.size(); ++w)
    for (uint64_t bits = set[w]; bits != 0; bits &= bits - 1)
      f(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
}

} // namespace

Automaton::Automaton(const Nfa &efa, LengthWindow window, size_t max_table_entries)
    : states_(efa.nodes), window_(window) {
  // The nodes already lie on accepting paths (trimmed), so every distance is
  // finite; the start comes first.
  const size_t n = states_.size();
  if (efa.empty())
    throw std::invalid_argument("no string matches");
  std::vector<std::vector<std::pair<int32_t, int32_t>>> reverse(n);
  for (size_t i = 0; i < n; ++i)
    for (const NfaMove &m : states_[i].moves)
      reverse[static_cast<size_t>(m.next)].push_back({static_cast<int32_t>(i), move_bytes(m)});
  dist_.assign(n, -1);
  using Item = std::pair<int32_t, int32_t>; // distance, state
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
  for (size_t i = 0; i < n; ++i)
    if (states_[i].accept)
      queue.push({0, static_cast<int32_t>(i)});
  while (!queue.empty()) {
    const auto [d, s] = queue.top();
    queue.pop();
    if (dist_[static_cast<size_t>(s)] >= 0)
      continue;
    dist_[static_cast<size_t>(s)] = d;
    for (const auto &[from, w] : reverse[static_cast<size_t>(s)])
      if (dist_[static_cast<size_t>(from)] < 0)
        queue.push({d + w, from});
  }
  if (window_.max_chars >= 0 || window_.min_chars > 0) {
    table_chars_ = window_.max_chars >= 0 ? window_.max_chars : window_.min_chars;
    const size_t entries = n * (static_cast<size_t>(table_chars_) + 1);
    if (entries > max_table_entries)
      throw std::invalid_argument(
          fmt::format("the length limits with this pattern need a table of {} entries (at most {})",
                      entries, max_table_entries));
    fill_table();
  }
  start_.assign((n + 63) / 64, 0);
  if (need(static_cast<size_t>(efa.start), 0) < 0)
    throw std::invalid_argument("no string of the allowed length matches");
  start_[static_cast<size_t>(efa.start) / 64] |= uint64_t{1} << (efa.start % 64);
}

void Automaton::fill_table() {
  const size_t n = states_.size();
  const auto len = static_cast<size_t>(table_chars_) + 1;
  table_.assign(n * len, -1);
  // best[k][s]: fewest bytes from s with exactly k characters (bounded
  // window) or at least k characters (no upper limit).
  const bool bounded = window_.max_chars >= 0;
  std::vector<std::vector<int32_t>> best(len, std::vector<int32_t>(n, kNever));
  for (size_t s = 0; s < n; ++s)
    best[0][s] = bounded ? (states_[s].accept ? 0 : kNever) : dist_[s];
  for (size_t k = 1; k < len; ++k)
    for (size_t s = 0; s < n; ++s) {
      int32_t v = kNever;
      for (const NfaMove &m : states_[s].moves)
        v = std::min(v, move_bytes(m) + best[k - 1][static_cast<size_t>(m.next)]);
      best[k][s] = std::min(v, kNever);
    }
  const int32_t lo_chars = window_.min_chars;
  for (size_t s = 0; s < n; ++s) {
    if (!bounded) {
      for (size_t c = 0; c < len; ++c) {
        const int32_t v =
            best[static_cast<size_t>(std::max<int32_t>(0, lo_chars - static_cast<int32_t>(c)))][s];
        table_[s * len + c] = v >= kNever ? -1 : v;
      }
      continue;
    }
    // With c characters read, the rest has between max(0, min - c) and
    // max - c characters: a window over k that slides right as c falls.
    std::deque<size_t> window; // indexes k with increasing best
    size_t next_k = 0;
    for (int32_t c = table_chars_; c >= 0; --c) {
      const auto hi = static_cast<size_t>(table_chars_ - c);
      const auto lo = static_cast<size_t>(std::max<int32_t>(0, lo_chars - c));
      for (; next_k <= hi; ++next_k) {
        while (!window.empty() && best[window.back()][s] >= best[next_k][s])
          window.pop_back();
        window.push_back(next_k);
      }
      while (!window.empty() && window.front() < lo)
        window.pop_front();
      const int32_t v = window.empty() ? kNever : best[window.front()][s];
      table_[s * len + static_cast<size_t>(c)] = v >= kNever ? -1 : v;
    }
  }
}

int32_t Automaton::need(size_t state, int32_t chars) const {
  if (window_.max_chars >= 0 && chars > window_.max_chars)
    return -1;
  if (table_chars_ < 0 || chars > table_chars_)
    return dist_[state];
  return table_[state * (static_cast<size_t>(table_chars_) + 1) + static_cast<size_t>(chars)];
}

NfaSet Automaton::step(const NfaSet &from, uint32_t cp, int32_t chars_before) const {
  NfaSet next(from.size(), 0);
  bool any = false;
  for_each_state(from, [&](size_t s) {
    for (const NfaMove &m : states_[s].moves)
      if (in_ranges(m.ranges, cp) && need(static_cast<size_t>(m.next), chars_before + 1) >= 0) {
        next[static_cast<size_t>(m.next) / 64] |= uint64_t{1} << (m.next % 64);
        any = true;
      }
  });
  if (!any)
    next.clear();
  return next;
}

int32_t Automaton::min_bytes_after_step_within(const NfaSet &set, uint32_t lo, uint32_t hi,
                                               int32_t chars_before) const {
  int32_t best = -1;
  for_each_state(set, [&](size_t s) {
    for (const NfaMove &m : states_[s].moves) {
      const int32_t d = need(static_cast<size_t>(m.next), chars_before + 1);
      if (d < 0 || (best >= 0 && d >= best))
        continue;
      for (const auto &r : m.ranges)
        if (r.lo <= hi && lo <= r.hi) {
          best = d;
          break;
        }
    }
  });
  return best;
}

bool Automaton::accepts(const NfaSet &set, int32_t chars) const {
  if (chars < window_.min_chars || (window_.max_chars >= 0 && chars > window_.max_chars))
    return false;
  bool yes = false;
  for_each_state(set, [&](size_t s) { yes = yes || states_[s].accept; });
  return yes;
}

int32_t Automaton::min_bytes_to_match(const NfaSet &set, int32_t chars) const {
  int32_t best = -1;
  for_each_state(set, [&](size_t s) {
    const int32_t d = need(s, chars);
    if (d >= 0 && (best < 0 || d < best))
      best = d;
  });
  return best;
}

NfaSet Automaton::step_any(const NfaSet &from, uint32_t cp) const {
  NfaSet next(from.size(), 0);
  bool any = false;
  for_each_state(from, [&](size_t s) {
    for (const NfaMove &m : states_[s].moves)
      if (in_ranges(m.ranges, cp)) {
        next[static_cast<size_t>(m.next) / 64] |= uint64_t{1} << (m.next % 64);
        any = true;
      }
  });
  if (!any)
    next.clear();
  return next;
}

bool Automaton::can_step(const NfaSet &set, int32_t chars) const {
  bool yes = false;
  for_each_state(set, [&](size_t s) {
    for (const NfaMove &m : states_[s].moves)
      yes = yes || need(static_cast<size_t>(m.next), chars + 1) >= 0;
  });
  return yes;
}

} // namespace bonsai::constrain
