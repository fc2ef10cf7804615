// TokenIndex (the vocabulary sorted by bytes) and TokenConstraint's checks
// and masks.
#include "bonsai/core/token_constraint.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "matcher_state.hpp"

namespace bonsai {
namespace {

using namespace constrain;

// Characters in a token that a JSON string holds as is, or -1 when a byte is
// a quote, a backslash, a control, or part of an incomplete or invalid
// UTF-8 sequence.
int32_t count_plain_chars(std::string_view bytes) {
  int32_t chars = 0;
  for (size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (b < 0x80) {
      if (b < 0x20 || b == '"' || b == '\\')
        return -1;
      ++i;
    } else {
      const size_t len = b >= 0xC2 && b <= 0xDF   ? 2
                         : b >= 0xE0 && b <= 0xEF ? 3
                         : b >= 0xF0 && b <= 0xF4 ? 4
                                                  : 0;
      if (len == 0 || i + len > bytes.size())
        return -1;
      const auto second = static_cast<uint8_t>(bytes[i + 1]);
      if ((b == 0xE0 && second < 0xA0) || (b == 0xED && second > 0x9F) ||
          (b == 0xF0 && second < 0x90) || (b == 0xF4 && second > 0x8F))
        return -1;
      for (size_t k = 1; k < len; ++k)
        if ((static_cast<uint8_t>(bytes[i + k]) & 0xC0) != 0x80)
          return -1;
      i += len;
    }
    ++chars;
  }
  return chars;
}

void sort_entries(std::vector<TokenIndex::Entry> &entries, const std::string &bytes) {
  auto view = [&](const TokenIndex::Entry &e) {
    return std::string_view(bytes).substr(e.offset, e.length);
  };
  std::sort(entries.begin(), entries.end(),
            [&](const auto &a, const auto &b) { return view(a) < view(b); });
  for (size_t i = 1; i < entries.size(); ++i) {
    const std::string_view prev = view(entries[i - 1]), cur = view(entries[i]);
    const auto mismatch = std::mismatch(prev.begin(), prev.end(), cur.begin(), cur.end());
    entries[i].shared = static_cast<uint32_t>(mismatch.first - prev.begin());
  }
  if (!entries.empty())
    entries[0].shared = 0;
}

// Builds the trie of sorted entries: each entry shares `shared` bytes with
// the one before, so its new nodes hang below that one's path.
TokenIndex::Trie build_trie(const std::vector<TokenIndex::Entry> &entries,
                            const std::string &bytes) {
  TokenIndex::Trie trie;
  trie.nodes.emplace_back();        // the root
  std::vector<uint32_t> path = {0}; // node at each depth of the previous entry
  for (const TokenIndex::Entry &e : entries) {
    const std::string_view b = std::string_view(bytes).substr(e.offset, e.length);
    trie.depth = std::max(trie.depth, b.size());
    if (e.shared == b.size() && path.size() == b.size() + 1) {
      trie.aliases.push_back({path.back(), e.id}); // the same bytes as the entry before
      continue;
    }
    uint32_t previous_sibling = path.size() > e.shared + 1 ? path[e.shared + 1] : 0;
    path.resize(e.shared + 1);
    for (size_t d = e.shared; d < b.size(); ++d) {
      const auto node = static_cast<uint32_t>(trie.nodes.size());
      TokenIndex::TrieNode n;
      n.byte = static_cast<uint8_t>(b[d]);
      trie.nodes.push_back(n);
      if (previous_sibling != 0)
        trie.nodes[previous_sibling].next_sibling = node;
      else
        trie.nodes[path.back()].first_child = node;
      previous_sibling = 0; // deeper nodes are first children
      path.push_back(node);
    }
    trie.nodes[path.back()].token = e.id;
  }
  return trie;
}

// Most token steps kept for the automaton strings of one reply (12 bytes
// each); past it, masks there walk the trie as elsewhere.
constexpr size_t kMaxCachedSteps = size_t{2} << 20;

// Depth first over the trie's nodes below the root: enter(node, depth) says
// whether to go on below the node. `pending` is the caller's storage.
template <typename Enter>
void depth_first(const TokenIndex::Trie &trie, std::vector<std::pair<uint32_t, uint32_t>> &pending,
                 Enter &&enter) {
  pending.clear();
  for (uint32_t c = trie.nodes[0].first_child; c != 0; c = trie.nodes[c].next_sibling)
    pending.push_back({c, 1});
  while (!pending.empty()) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    if (!enter(node, depth))
      continue;
    for (uint32_t c = trie.nodes[node].first_child; c != 0; c = trie.nodes[c].next_sibling)
      pending.push_back({c, depth + 1});
  }
}

// The plain tokens an automaton's state set can read, each with the set
// after it (by index into `sets`) and its characters. Plain tokens never end
// the string, so this depends on nothing else; the length limits and the
// budget are applied per mask.
struct PlainSteps {
  struct Step {
    int32_t token, set, chars;
  };
  std::vector<Step> steps;
  std::vector<NfaSet> sets;
};

// Walks the trie from `from` through plain bytes only, stepping the
// automaton at each complete code point; records every token reached.
PlainSteps plain_steps(const Automaton &a, const NfaSet &from, const TokenIndex::Trie &trie) {
  PlainSteps out;
  std::map<NfaSet, int32_t> set_ids;
  std::unordered_map<uint32_t, size_t> step_of_node;
  struct Level {
    NfaSet set;
    int32_t chars = 0;
    uint32_t cp = 0;
    uint8_t lead = 0, left = 0; // UTF-8 character being read
  };
  std::vector<Level> levels(trie.depth + 1);
  levels[0].set = from;
  std::vector<std::pair<uint32_t, uint32_t>> pending;
  depth_first(trie, pending, [&](uint32_t node, uint32_t depth) {
    const TokenIndex::TrieNode &n = trie.nodes[node];
    const Level &up = levels[depth - 1];
    Level here = up;
    const uint8_t b = n.byte;
    bool complete = false;
    if (up.left == 0) {
      if (b < 0x20 || b == '"' || b == '\\' || (b >= 0x80 && b < 0xC2) || b > 0xF4)
        return false;
      if (b < 0x80) {
        here.cp = b;
        complete = true;
      } else {
        here.lead = b;
        here.cp = b & (b >= 0xF0 ? 0x07u : b >= 0xE0 ? 0x0Fu : 0x1Fu);
        here.left = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1;
      }
    } else {
      const int expected = up.lead >= 0xF0 ? 3 : up.lead >= 0xE0 ? 2 : 1;
      if ((b & 0xC0) != 0x80 ||
          (up.left == expected && ((up.lead == 0xE0 && b < 0xA0) || (up.lead == 0xED && b > 0x9F) ||
                                   (up.lead == 0xF0 && b < 0x90) || (up.lead == 0xF4 && b > 0x8F))))
        return false;
      here.cp = up.cp << 6 | (b & 0x3Fu);
      complete = --here.left == 0;
    }
    if (complete) {
      here.set = a.step_any(up.set, here.cp);
      if (here.set.empty())
        return false;
      ++here.chars;
      if (n.token >= 0) {
        const auto [it, fresh] =
            set_ids.try_emplace(here.set, static_cast<int32_t>(out.sets.size()));
        if (fresh)
          out.sets.push_back(here.set);
        step_of_node[node] = out.steps.size();
        out.steps.push_back({n.token, it->second, here.chars});
      }
    }
    levels[depth] = std::move(here);
    return true;
  });
  for (const auto &[node, token] : trie.aliases)
    if (const auto it = step_of_node.find(node); it != step_of_node.end()) {
      PlainSteps::Step alias = out.steps[it->second];
      alias.token = token;
      out.steps.push_back(alias);
    }
  return out;
}

} // namespace

// For each (automaton, state set) met inside a string in this reply.
struct TokenConstraint::AutomatonCache {
  std::map<std::pair<int32_t, NfaSet>, PlainSteps> entries;
  size_t steps = 0;
};

TokenIndex::TokenIndex(const Tokenizer &tokenizer) : n_vocab_(tokenizer.n_vocab()) {
  offset_.resize(static_cast<size_t>(n_vocab_));
  length_.resize(static_cast<size_t>(n_vocab_));
  plain_chars_.assign(static_cast<size_t>(n_vocab_), -1);
  usable_.assign(static_cast<size_t>(n_vocab_), 0);
  plain_mask_.assign(static_cast<size_t>(n_vocab_), 0);
  for (int32_t id = 0; id < n_vocab_; ++id) {
    const std::string_view b = tokenizer.token_bytes(id);
    offset_[static_cast<size_t>(id)] = static_cast<uint32_t>(bytes_.size());
    length_[static_cast<size_t>(id)] = static_cast<uint32_t>(b.size());
    bytes_.append(b);
    const TokenType type = tokenizer.token_type(id);
    if (b.empty() || type == TokenType::Control || type == TokenType::Unused)
      continue;
    const Entry e{id, offset_[static_cast<size_t>(id)], static_cast<uint32_t>(b.size()), 0};
    all_.push_back(e);
    usable_[static_cast<size_t>(id)] = 1;
    const int32_t chars = count_plain_chars(b);
    plain_chars_[static_cast<size_t>(id)] = chars;
    if (chars < 0) {
      not_plain_.push_back(e);
    } else {
      plain_mask_[static_cast<size_t>(id)] = 1;
      most_plain_chars_ = std::max(most_plain_chars_, chars);
    }
  }
  sort_entries(all_, bytes_);
  sort_entries(not_plain_, bytes_);
  all_trie_ = build_trie(all_, bytes_);
  not_plain_trie_ = build_trie(not_plain_, bytes_);
}

std::string_view TokenIndex::token_bytes(int32_t id) const {
  return std::string_view(bytes_).substr(offset_[static_cast<size_t>(id)],
                                         length_[static_cast<size_t>(id)]);
}

TokenConstraint::TokenConstraint(Grammar grammar, std::shared_ptr<const TokenIndex> index,
                                 std::vector<int32_t> end_tokens)
    : matcher_(std::move(grammar)), index_(std::move(index)), end_tokens_(std::move(end_tokens)) {
  mask_.assign(static_cast<size_t>(index_->n_vocab()), 0);
}

TokenConstraint::TokenConstraint(TokenConstraint &&) noexcept = default;
TokenConstraint &TokenConstraint::operator=(TokenConstraint &&) noexcept = default;
TokenConstraint::~TokenConstraint() = default;

bool TokenConstraint::is_end_token(int32_t token) const {
  return std::find(end_tokens_.begin(), end_tokens_.end(), token) != end_tokens_.end();
}

bool TokenConstraint::fits(const GrammarMatcher &after, int32_t budget) const {
  // Every byte is a token of its own, so N bytes take at most N tokens; one
  // more is kept for the end token, so that a complete reply ends as the
  // model's own turn would.
  return budget < 0 || after.min_bytes_to_complete() <= budget - 2;
}

bool TokenConstraint::allows(int32_t token, int32_t budget) const {
  if (token < 0 || token >= index_->n_vocab())
    return false;
  if (is_end_token(token))
    return matcher_.complete();
  if (!index_->usable(token))
    return false;
  GrammarMatcher trial = matcher_;
  return trial.advance(index_->token_bytes(token)) && fits(trial, budget);
}

void TokenConstraint::accept(int32_t token) {
  if (is_end_token(token)) {
    if (!matcher_.complete())
      throw Error("constrained decoding: the reply ended before the grammar was complete");
    return;
  }
  if (token < 0 || token >= index_->n_vocab() || !matcher_.advance(index_->token_bytes(token)))
    throw Error(fmt::format("constrained decoding: the grammar does not allow token {}", token));
}

namespace {

// The one way to read the reply, when it is between two characters of a
// string's value (its node in `node`); else nullptr.
const Stack *inside_string(const GrammarMatcher &matcher, const Node *&node) {
  const auto &stacks = matcher.state().stacks;
  if (stacks.size() != 1 || stacks[0].frames.empty())
    return nullptr;
  const Stack &st = stacks[0];
  node = &matcher.grammar().data().nodes[static_cast<size_t>(st.frames.back().node)];
  if (node->kind != NodeKind::string || st.lex.phase != 1 || st.lex.utf8_left != 0)
    return nullptr;
  return &st;
}

} // namespace

// Inside a plain JSON string (no pattern, no length still owed, no names to
// avoid) a plain token only adds characters: it is allowed within the
// maximum length, and it leaves the bytes still needed unchanged.
bool TokenConstraint::in_plain_string(int32_t &max_chars) const {
  const Node *node = nullptr;
  const Stack *inside = inside_string(matcher_, node);
  if (inside == nullptr)
    return false;
  const Stack &st = *inside;
  const Node &n = *node;
  if (n.automaton >= 0 || st.lex.chars < n.min || (!n.excluded.empty() && st.lex.key_depth >= 0))
    return false;
  max_chars = n.max < 0 ? INT32_MAX : n.max - st.lex.chars;
  return true;
}

bool TokenConstraint::mask_automaton_string(int32_t budget) {
  const Node *node = nullptr;
  const Stack *inside = inside_string(matcher_, node);
  if (inside == nullptr || node->automaton < 0)
    return false;
  const Stack &st = *inside;
  const Node &n = *node;
  const Automaton &a = matcher_.grammar().data().automata[static_cast<size_t>(n.automaton)];
  if (!automaton_cache_)
    automaton_cache_ = std::make_unique<AutomatonCache>();
  AutomatonCache &cache = *automaton_cache_;
  auto key = std::make_pair(n.automaton, st.lex.nfa);
  auto it = cache.entries.find(key);
  if (it == cache.entries.end()) {
    if (cache.steps >= kMaxCachedSteps)
      return false;
    PlainSteps entry = plain_steps(a, st.lex.nfa, index_->all_trie());
    cache.steps += entry.steps.size();
    it = cache.entries.emplace(std::move(key), std::move(entry)).first;
  }
  // The bytes after the string's close quote, the same for every token
  // that stays inside it.
  const int32_t here = a.min_bytes_to_match(st.lex.nfa, st.lex.chars);
  const int32_t after = matcher_.min_bytes_to_complete() - here - 1;
  const int32_t chars = st.lex.chars;
  for (const PlainSteps::Step &step : it->second.steps) {
    const int32_t need =
        a.min_bytes_to_match(it->second.sets[static_cast<size_t>(step.set)], chars + step.chars);
    if (need >= 0 && (budget < 0 || need + 1 + after <= budget - 2))
      mask_[static_cast<size_t>(step.token)] = 1;
  }
  walk(index_->not_plain_trie(), budget);
  return true;
}

void TokenConstraint::walk(const TokenIndex::Trie &trie, int32_t budget) {
  if (path_.size() < trie.depth + 1)
    path_.resize(trie.depth + 1, matcher_);
  path_[0] = matcher_;
  // Depth first: path_[d] holds the matcher after the d bytes of the node
  // being visited, which the parent's visit left in path_[d - 1].
  depth_first(trie, pending_, [&](uint32_t node, uint32_t depth) {
    const TokenIndex::TrieNode &n = trie.nodes[node];
    GrammarMatcher &here = path_[depth];
    here = path_[depth - 1];
    const char byte = static_cast<char>(n.byte);
    if (!here.advance(std::string_view(&byte, 1)))
      return false; // no token below this prefix can follow
    if (n.token >= 0 && fits(here, budget))
      mask_[static_cast<size_t>(n.token)] = 1;
    return true;
  });
  for (const auto &[node, token] : trie.aliases)
    mask_[static_cast<size_t>(token)] = mask_[static_cast<size_t>(trie.nodes[node].token)];
}

const std::vector<uint8_t> &TokenConstraint::mask(int32_t budget) {
  std::fill(mask_.begin(), mask_.end(), 0);
  int32_t max_chars = 0;
  if (in_plain_string(max_chars)) {
    // A plain token leaves the bytes still needed as they are: all of them
    // fit the budget, or none does (then only a closing quote may come).
    const bool plain_fits = fits(matcher_, budget);
    if (plain_fits && max_chars >= index_->most_plain_chars()) {
      mask_ = index_->plain_mask();
    } else if (plain_fits) {
      for (const auto &e : index_->all()) {
        const int32_t chars = index_->plain_chars(e.id);
        if (chars >= 0 && chars <= max_chars)
          mask_[static_cast<size_t>(e.id)] = 1;
      }
    }
    walk(index_->not_plain_trie(), budget);
  } else if (!mask_automaton_string(budget)) {
    walk(index_->all_trie(), budget);
  }
  if (matcher_.complete())
    for (const int32_t t : end_tokens_)
      if (t >= 0 && t < index_->n_vocab())
        mask_[static_cast<size_t>(t)] = 1;
  return mask_;
}

} // namespace bonsai
