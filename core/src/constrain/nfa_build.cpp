// Thompson's construction with look-aheads, epsilon removal, products,
// subset construction and Moore's minimization, all over code-point ranges.
#include "nfa_build.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

namespace bonsai::constrain {
namespace {

[[noreturn]] void over_budget(const StateBudget &budget) {
  throw std::invalid_argument(
      fmt::format("{} needs more than {} automaton states", budget.what, budget.max_states));
}

std::vector<uint32_t> code_points(std::string_view text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<uint8_t>(text[i]);
    const size_t len = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    uint32_t cp = len == 1 ? lead : lead & (0x7Fu >> len);
    for (size_t k = 1; k < len && i + k < text.size(); ++k)
      cp = (cp << 6) | (static_cast<uint8_t>(text[i + k]) & 0x3Fu);
    out.push_back(cp);
    i += len;
  }
  return out;
}

// Merges moves to the same node into one with the union of their ranges.
void merge_moves(std::vector<NfaMove> &moves) {
  if (moves.size() < 2)
    return;
  std::sort(moves.begin(), moves.end(),
            [](const NfaMove &a, const NfaMove &b) { return a.next < b.next; });
  std::vector<NfaMove> out;
  for (NfaMove &m : moves) {
    if (!out.empty() && out.back().next == m.next)
      out.back().ranges.insert(out.back().ranges.end(), m.ranges.begin(), m.ranges.end());
    else
      out.push_back(std::move(m));
  }
  for (NfaMove &m : out)
    m.ranges = normalize(std::move(m.ranges));
  moves = std::move(out);
}

// Keeps the nodes reachable from the start that can reach an accepting
// node, renumbered (the start first).
Nfa trim(const Nfa &in) {
  const size_t n = in.nodes.size();
  std::vector<uint8_t> forward(n, 0), backward(n, 0);
  std::vector<int32_t> work = {in.start};
  forward[static_cast<size_t>(in.start)] = 1;
  std::vector<std::vector<int32_t>> reverse(n);
  while (!work.empty()) {
    const int32_t s = work.back();
    work.pop_back();
    for (const NfaMove &m : in.nodes[static_cast<size_t>(s)].moves) {
      reverse[static_cast<size_t>(m.next)].push_back(s);
      if (!forward[static_cast<size_t>(m.next)]) {
        forward[static_cast<size_t>(m.next)] = 1;
        work.push_back(m.next);
      }
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (forward[i] && in.nodes[i].accept) {
      backward[i] = 1;
      work.push_back(static_cast<int32_t>(i));
    }
  while (!work.empty()) {
    const int32_t s = work.back();
    work.pop_back();
    for (const int32_t from : reverse[static_cast<size_t>(s)])
      if (!backward[static_cast<size_t>(from)]) {
        backward[static_cast<size_t>(from)] = 1;
        work.push_back(from);
      }
  }
  Nfa out;
  if (!backward[static_cast<size_t>(in.start)]) {
    out.nodes.emplace_back(); // nothing is accepted
    return out;
  }
  std::vector<int32_t> index(n, -1);
  std::vector<int32_t> order = {in.start};
  index[static_cast<size_t>(in.start)] = 0;
  for (size_t i = 0; i < n; ++i)
    if (forward[i] && backward[i] && index[i] < 0) {
      index[i] = static_cast<int32_t>(order.size());
      order.push_back(static_cast<int32_t>(i));
    }
  out.nodes.resize(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const NfaNode &src = in.nodes[static_cast<size_t>(order[k])];
    NfaNode &dst = out.nodes[k];
    dst.accept = src.accept;
    for (const NfaMove &m : src.moves)
      if (index[static_cast<size_t>(m.next)] >= 0)
        dst.moves.push_back({m.ranges, index[static_cast<size_t>(m.next)]});
  }
  return out;
}

// Folds the moves that read nothing into the nodes before them; at most
// 64 moves a state on average (nested optional parts fan out).
Nfa remove_epsilon(const Nfa &in, const StateBudget &budget) {
  const size_t max_moves = budget.max_states * 64;
  size_t moves = 0;
  const size_t n = in.nodes.size();
  std::vector<int32_t> index(n, -1);
  std::vector<int32_t> kept = {in.start};
  index[static_cast<size_t>(in.start)] = 0;
  for (const NfaNode &node : in.nodes)
    for (const NfaMove &m : node.moves)
      if (index[static_cast<size_t>(m.next)] < 0) {
        index[static_cast<size_t>(m.next)] = static_cast<int32_t>(kept.size());
        kept.push_back(m.next);
      }
  Nfa out;
  out.nodes.resize(kept.size());
  std::vector<uint32_t> seen(n, 0);
  uint32_t stamp = 0;
  std::vector<int32_t> work;
  for (size_t k = 0; k < kept.size(); ++k) {
    ++stamp;
    NfaNode &dst = out.nodes[k];
    work = {kept[k]};
    seen[static_cast<size_t>(kept[k])] = stamp;
    while (!work.empty()) {
      const int32_t s = work.back();
      work.pop_back();
      const NfaNode &src = in.nodes[static_cast<size_t>(s)];
      dst.accept = dst.accept || src.accept;
      for (const NfaMove &m : src.moves)
        dst.moves.push_back({m.ranges, index[static_cast<size_t>(m.next)]});
      for (const int32_t e : src.epsilon)
        if (seen[static_cast<size_t>(e)] != stamp) {
          seen[static_cast<size_t>(e)] = stamp;
          work.push_back(e);
        }
    }
    merge_moves(dst.moves);
    moves += dst.moves.size();
    if (moves > max_moves)
      throw std::invalid_argument(
          fmt::format("{} needs more than {} automaton transitions", budget.what, max_moves));
  }
  return trim(out);
}

class Thompson {
public:
  explicit Thompson(const StateBudget &budget) : budget_(budget) {
    accept_ = add(NfaNode{});
    nfa_.nodes[static_cast<size_t>(accept_)].accept = true;
  }

  Nfa run(const RegexAst &ast) {
    nfa_.start = build(ast, accept_);
    return std::move(nfa_);
  }

private:
  int32_t add(NfaNode node) {
    if (nfa_.nodes.size() >= budget_.max_states)
      over_budget(budget_);
    nfa_.nodes.push_back(std::move(node));
    return static_cast<int32_t>(nfa_.nodes.size() - 1);
  }

  // The entry node of `ast`, whose matches continue at `out`.
  int32_t build(const RegexAst &ast, int32_t out) {
    switch (ast.kind) {
    case RegexAst::Kind::chars: {
      NfaNode s;
      if (!ast.ranges.empty())
        s.moves.push_back({ast.ranges, out});
      return add(std::move(s)); // no ranges: matches nothing; trimming drops it
    }
    case RegexAst::Kind::concat:
      for (auto it = ast.kids.rbegin(); it != ast.kids.rend(); ++it)
        out = build(*it, out);
      return out;
    case RegexAst::Kind::alt: {
      NfaNode split;
      for (const RegexAst &kid : ast.kids)
        split.epsilon.push_back(build(kid, out));
      return add(std::move(split));
    }
    case RegexAst::Kind::repeat: {
      const RegexAst &kid = ast.kids[0];
      int32_t cur = out;
      if (ast.max < 0) {
        const int32_t loop = add(NfaNode{});
        ++open_loops_;
        const int32_t body = build(kid, loop);
        --open_loops_;
        nfa_.nodes[static_cast<size_t>(loop)].epsilon = {body, out};
        cur = loop;
      } else {
        for (int32_t i = ast.min; i < ast.max; ++i) {
          NfaNode split;
          split.epsilon = {build(kid, cur), out};
          cur = add(std::move(split));
        }
      }
      for (int32_t i = 0; i < ast.min; ++i)
        cur = build(kid, cur);
      return cur;
    }
    case RegexAst::Kind::lookahead:
      return lookahead(ast, out);
    }
    return out;
  }

  // The part of the automaton from `out` on (already complete: built
  // backwards), intersected with the look-ahead's language, as new nodes.
  int32_t lookahead(const RegexAst &ast, int32_t out) {
    if (open_loops_ > 0)
      throw std::invalid_argument("pattern: a look-ahead inside an unbounded repetition ('*', "
                                  "'+', '{n,}') is not supported");
    Nfa rest;
    std::unordered_map<int32_t, int32_t> index;
    std::vector<int32_t> work = {out};
    index[out] = 0;
    rest.nodes.emplace_back();
    while (!work.empty()) {
      const int32_t s = work.back();
      work.pop_back();
      auto local = [&](int32_t node) {
        const auto [it, fresh] = index.try_emplace(node, static_cast<int32_t>(rest.nodes.size()));
        if (fresh) {
          rest.nodes.emplace_back();
          work.push_back(node);
        }
        return it->second;
      };
      const NfaNode &src = nfa_.nodes[static_cast<size_t>(s)];
      NfaNode copy;
      copy.accept = s == accept_;
      for (const NfaMove &m : src.moves)
        copy.moves.push_back({m.ranges, local(m.next)});
      for (const int32_t e : src.epsilon)
        copy.epsilon.push_back(local(e));
      rest.nodes[static_cast<size_t>(index[s])] = std::move(copy);
    }
    const StateBudget inner{budget_.max_states, budget_.what};
    const Nfa body = compile_language(ast.kids[0], inner);
    std::optional<Nfa> dfa = try_determinize(body, budget_.max_states, true);
    if (!dfa)
      over_budget(budget_);
    if (ast.negated)
      dfa = complement(std::move(*dfa));
    const Nfa both = intersect(remove_epsilon(rest, inner), *dfa, inner);
    const auto base = static_cast<int32_t>(nfa_.nodes.size());
    for (const NfaNode &node : both.nodes) {
      NfaNode copy;
      for (const NfaMove &m : node.moves)
        copy.moves.push_back({m.ranges, base + m.next});
      if (node.accept)
        copy.epsilon.push_back(accept_);
      add(std::move(copy));
    }
    return base + both.start;
  }

  StateBudget budget_;
  Nfa nfa_;
  int32_t accept_ = -1;
  int32_t open_loops_ = 0; // unbounded repetitions being built: their loops are not wired yet
};

// Elementary intervals of the code points: the boundaries of every range.
std::vector<uint32_t> boundaries_of(const std::vector<const NfaMove *> &moves) {
  std::vector<uint32_t> b;
  for (const NfaMove *m : moves)
    for (const CodepointRange &r : m->ranges) {
      b.push_back(r.lo);
      if (r.hi < kMaxCodepoint)
        b.push_back(r.hi + 1);
    }
  b.push_back(0);
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

uint32_t interval_end(const std::vector<uint32_t> &bounds, size_t i) {
  return i + 1 < bounds.size() ? bounds[i + 1] - 1 : kMaxCodepoint;
}

} // namespace

bool Nfa::empty() const {
  return nodes.size() == 1 && nodes[0].moves.empty() && !nodes[0].accept;
}

Nfa compile_language(const RegexAst &ast, const StateBudget &budget) {
  return remove_epsilon(Thompson(budget).run(ast), budget);
}

Nfa intersect(const Nfa &a, const Nfa &b, const StateBudget &budget) {
  Nfa out;
  std::unordered_map<uint64_t, int32_t> index;
  std::vector<std::pair<int32_t, int32_t>> pairs;
  auto id = [&](int32_t x, int32_t y) {
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(x)) << 32) | static_cast<uint32_t>(y);
    const auto [it, fresh] = index.try_emplace(key, static_cast<int32_t>(pairs.size()));
    if (fresh) {
      if (pairs.size() >= budget.max_states)
        over_budget(budget);
      pairs.push_back({x, y});
    }
    return it->second;
  };
  out.start = id(a.start, b.start);
  for (size_t k = 0; k < pairs.size(); ++k) {
    const auto [x, y] = pairs[k];
    const NfaNode &na = a.nodes[static_cast<size_t>(x)], &nb = b.nodes[static_cast<size_t>(y)];
    NfaNode node;
    node.accept = na.accept && nb.accept;
    for (const NfaMove &ma : na.moves)
      for (const NfaMove &mb : nb.moves) {
        Ranges r = intersect(ma.ranges, mb.ranges);
        if (!r.empty())
          node.moves.push_back({std::move(r), id(ma.next, mb.next)});
      }
    merge_moves(node.moves);
    out.nodes.push_back(std::move(node));
  }
  return trim(out);
}

std::optional<Nfa> try_determinize(const Nfa &efa, size_t max_states, bool complete) {
  Nfa out;
  std::map<std::vector<int32_t>, int32_t> index;
  std::vector<std::vector<int32_t>> sets;
  int32_t sink = -1;
  auto id = [&](std::vector<int32_t> set) -> std::optional<int32_t> {
    if (set.empty()) {
      if (sink < 0) {
        if (sets.size() >= max_states)
          return std::nullopt;
        sink = static_cast<int32_t>(sets.size());
        sets.emplace_back();
      }
      return sink;
    }
    const auto [it, fresh] = index.try_emplace(set, static_cast<int32_t>(sets.size()));
    if (fresh) {
      if (sets.size() >= max_states)
        return std::nullopt;
      sets.push_back(std::move(set));
    }
    return it->second;
  };
  out.start = *id({efa.start});
  std::vector<const NfaMove *> moves;
  for (size_t k = 0; k < sets.size(); ++k) {
    NfaNode node;
    moves.clear();
    for (const int32_t s : sets[k]) {
      const NfaNode &src = efa.nodes[static_cast<size_t>(s)];
      node.accept = node.accept || src.accept;
      for (const NfaMove &m : src.moves)
        moves.push_back(&m);
    }
    const std::vector<uint32_t> bounds = boundaries_of(moves);
    std::vector<std::vector<int32_t>> targets(bounds.size());
    for (const NfaMove *m : moves)
      for (const CodepointRange &r : m->ranges)
        for (auto i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), r.lo) -
                                          bounds.begin());
             i < bounds.size() && bounds[i] <= r.hi; ++i)
          targets[i].push_back(m->next);
    for (size_t i = 0; i < bounds.size(); ++i) {
      std::vector<int32_t> &t = targets[i];
      if (t.empty() && (!complete || static_cast<int32_t>(k) == sink))
        continue;
      std::sort(t.begin(), t.end());
      t.erase(std::unique(t.begin(), t.end()), t.end());
      const std::optional<int32_t> next = id(std::move(t));
      if (!next)
        return std::nullopt;
      node.moves.push_back({{{bounds[i], interval_end(bounds, i)}}, *next});
    }
    if (static_cast<int32_t>(k) == sink && complete)
      node.moves = {{{{0, kMaxCodepoint}}, sink}};
    merge_moves(node.moves);
    out.nodes.push_back(std::move(node));
  }
  return out;
}

Nfa complement(Nfa dfa) {
  for (NfaNode &node : dfa.nodes)
    node.accept = !node.accept;
  return trim(dfa);
}

std::optional<Nfa> try_minimize(const Nfa &dfa, size_t max_work) {
  const size_t n = dfa.nodes.size();
  std::vector<const NfaMove *> all;
  for (const NfaNode &node : dfa.nodes)
    for (const NfaMove &m : node.moves)
      all.push_back(&m);
  const std::vector<uint32_t> bounds = boundaries_of(all);
  const size_t classes = bounds.size();
  // next[s * classes + c]: the target on class c, or -1.
  std::vector<int32_t> next(n * classes, -1);
  for (size_t s = 0; s < n; ++s)
    for (const NfaMove &m : dfa.nodes[s].moves)
      for (const CodepointRange &r : m.ranges)
        for (auto i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), r.lo) -
                                          bounds.begin());
             i < classes && bounds[i] <= r.hi; ++i)
          next[s * classes + i] = m.next;
  std::vector<int32_t> block(n);
  for (size_t s = 0; s < n; ++s)
    block[s] = dfa.nodes[s].accept ? 1 : 0;
  size_t count = 0, work = 0;
  for (bool changed = true; changed;) {
    work += n * (classes + 1);
    if (work > max_work)
      return std::nullopt;
    std::map<std::vector<int32_t>, int32_t> signature;
    std::vector<int32_t> refined(n);
    for (size_t s = 0; s < n; ++s) {
      std::vector<int32_t> sig;
      sig.reserve(classes + 1);
      sig.push_back(block[s]);
      for (size_t c = 0; c < classes; ++c) {
        const int32_t t = next[s * classes + c];
        sig.push_back(t < 0 ? -1 : block[static_cast<size_t>(t)]);
      }
      refined[s] = signature.try_emplace(std::move(sig), static_cast<int32_t>(signature.size()))
                       .first->second;
    }
    changed = signature.size() != count;
    count = signature.size();
    block = std::move(refined);
  }
  Nfa out;
  out.nodes.resize(count);
  std::vector<uint8_t> done(count, 0);
  for (size_t s = 0; s < n; ++s) {
    const auto b = static_cast<size_t>(block[s]);
    if (done[b])
      continue;
    done[b] = 1;
    NfaNode &node = out.nodes[b];
    node.accept = dfa.nodes[s].accept;
    for (size_t c = 0; c < classes; ++c)
      if (const int32_t t = next[s * classes + c]; t >= 0)
        node.moves.push_back(
            {{{bounds[c], interval_end(bounds, c)}}, block[static_cast<size_t>(t)]});
    merge_moves(node.moves);
  }
  out.start = block[static_cast<size_t>(dfa.start)];
  return trim(out);
}

Nfa all_but(const std::vector<std::string> &texts) {
  // A trie of the texts; leaving it, or going on past a text's end, leads
  // to the accepting sink.
  Nfa out;
  out.nodes.emplace_back(); // the sink
  out.nodes[0].accept = true;
  out.nodes[0].moves.push_back({{{0, kMaxCodepoint}}, 0});
  out.nodes.emplace_back(); // the root
  out.start = 1;
  std::vector<std::map<uint32_t, int32_t>> children(2);
  std::vector<uint8_t> ends(2, 0);
  for (const std::string &text : texts) {
    int32_t at = 1;
    for (const uint32_t cp : code_points(text)) {
      auto &kids = children[static_cast<size_t>(at)];
      auto it = kids.find(cp);
      if (it == kids.end()) {
        it = kids.emplace(cp, static_cast<int32_t>(out.nodes.size())).first;
        out.nodes.emplace_back();
        children.emplace_back();
        ends.push_back(0);
      }
      at = it->second;
    }
    ends[static_cast<size_t>(at)] = 1;
  }
  for (size_t i = 1; i < out.nodes.size(); ++i) {
    NfaNode &node = out.nodes[i];
    node.accept = !ends[i];
    Ranges taken;
    for (const auto &[cp, child] : children[i]) {
      node.moves.push_back({{{cp, cp}}, child});
      taken.push_back({cp, cp});
    }
    const Ranges rest = complement(normalize(taken));
    if (!rest.empty())
      node.moves.push_back({rest, 0});
  }
  return trim(out);
}

bool accepts_text(const Nfa &efa, std::string_view text) {
  std::vector<int32_t> set = {efa.start}, next;
  for (const uint32_t cp : code_points(text)) {
    next.clear();
    for (const int32_t s : set)
      for (const NfaMove &m : efa.nodes[static_cast<size_t>(s)].moves)
        if (in_ranges(m.ranges, cp))
          next.push_back(m.next);
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    set.swap(next);
    if (set.empty())
      return false;
  }
  return std::any_of(set.begin(), set.end(),
                     [&](int32_t s) { return efa.nodes[static_cast<size_t>(s)].accept; });
}

} // namespace bonsai::constrain
