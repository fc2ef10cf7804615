#pragma once
// Constrained decoding at the token level: which tokens of the vocabulary a
// grammar allows next, fast enough to run every step.
//
// The usual step costs one token walk: sample as usual, then check the
// chosen token (allows()). Only when the grammar refuses it is the full mask
// computed (mask()), and the step samples again from the allowed tokens.
// The mask walks a byte trie of the vocabulary, so that tokens sharing a
// prefix share the work and a dead prefix skips all its tokens; inside a
// plain JSON string, where almost every token is allowed, tokens made only
// of ordinary characters are allowed as a class and only the rest (about
// 6,000 of Qwen3's 151,669) are walked. Inside a string that follows an
// automaton (a pattern, a format), the ordinary tokens each state can read
// are found once per state and kept: a step there costs a pass over that
// list plus the walk of the rest.
//
// The reply must also end in time: given the tokens left (the budget), a
// token is allowed only if the fewest bytes that complete the reply after it,
// plus the end token, still fit; a budget that can hold the shortest
// completion therefore always gets a complete reply.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bonsai/core/grammar.hpp"
#include "bonsai/core/tokenizer.hpp"

namespace bonsai {

// The vocabulary sorted by bytes, with what the masks precompute. Immutable;
// build one per tokenizer and share it.
class TokenIndex {
public:
  explicit TokenIndex(const Tokenizer &tokenizer);

  struct Entry {
    int32_t id = 0;
    uint32_t offset = 0; // into bytes()
    uint32_t length = 0;
    uint32_t shared = 0; // leading bytes shared with the entry before
  };
  int32_t n_vocab() const { return n_vocab_; }
  std::string_view bytes_of(const Entry &e) const {
    return std::string_view(bytes_).substr(e.offset, e.length);
  }
  std::string_view token_bytes(int32_t id) const;
  // Tokens a grammar may produce (not control, not unused, not empty), sorted.
  const std::vector<Entry> &all() const { return all_; }
  // Of those, the ones that are not plain string text, sorted.
  const std::vector<Entry> &not_plain() const { return not_plain_; }
  // Characters of a plain token (only characters a JSON string holds without
  // an escape, each complete); -1 for the others.
  int32_t plain_chars(int32_t id) const { return plain_chars_[static_cast<size_t>(id)]; }
  // 1 for every plain token, by id; and the most characters one holds.
  const std::vector<uint8_t> &plain_mask() const { return plain_mask_; }
  int32_t most_plain_chars() const { return most_plain_chars_; }
  // The same tokens as byte tries: a node per distinct prefix, children
  // linked as siblings. Node 0 is the root.
  struct TrieNode {
    uint32_t first_child = 0;  // 0: none
    uint32_t next_sibling = 0; // 0: none
    int32_t token = -1;        // the token these bytes spell, or -1
    uint8_t byte = 0;
  };
  struct Trie {
    std::vector<TrieNode> nodes;
    // Tokens with the same bytes as a node's token: (node, token).
    std::vector<std::pair<uint32_t, int32_t>> aliases;
    size_t depth = 0; // the longest token
  };
  const Trie &all_trie() const { return all_trie_; }
  const Trie &not_plain_trie() const { return not_plain_trie_; }
  // Whether a grammar may produce the token at all (it is in all()).
  bool usable(int32_t id) const { return usable_[static_cast<size_t>(id)] != 0; }

private:
  int32_t n_vocab_ = 0;
  std::string bytes_;
  std::vector<uint32_t> offset_, length_; // by id
  std::vector<Entry> all_, not_plain_;
  std::vector<int32_t> plain_chars_;
  std::vector<uint8_t> usable_, plain_mask_;
  int32_t most_plain_chars_ = 0;
  Trie all_trie_, not_plain_trie_;
};

class TokenConstraint {
public:
  // `end_tokens` end the reply; they are allowed once the text is complete.
  TokenConstraint(Grammar grammar, std::shared_ptr<const TokenIndex> index,
                  std::vector<int32_t> end_tokens);
  TokenConstraint(TokenConstraint &&) noexcept;
  TokenConstraint &operator=(TokenConstraint &&) noexcept;
  ~TokenConstraint();

  // Whether `token` may come next with `budget` tokens left (this one
  // included; negative: no limit).
  bool allows(int32_t token, int32_t budget) const;
  // One byte per vocabulary id: 1 where allowed (same rule as allows()).
  const std::vector<uint8_t> &mask(int32_t budget);
  // Moves past `token`. Throws bonsai::Error when the grammar refuses it.
  void accept(int32_t token);

  bool complete() const { return matcher_.complete(); }
  bool is_end_token(int32_t token) const;
  const GrammarMatcher &matcher() const { return matcher_; }

private:
  bool fits(const GrammarMatcher &after, int32_t budget) const;
  bool in_plain_string(int32_t &max_chars) const;
  // Allows the plain tokens inside a string read by an automaton; false
  // (nothing done) when the reply is not in one or the cache is full.
  bool mask_automaton_string(int32_t budget);
  void walk(const TokenIndex::Trie &trie, int32_t budget);

  GrammarMatcher matcher_;
  std::shared_ptr<const TokenIndex> index_;
  std::vector<int32_t> end_tokens_;
  std::vector<uint8_t> mask_;
  std::vector<GrammarMatcher> path_; // matcher after each byte of the walk's current token
  std::vector<std::pair<uint32_t, uint32_t>> pending_; // the walk's nodes still to visit, depths
  struct AutomatonCache;                               // token_constraint.cpp
  std::unique_ptr<AutomatonCache> automaton_cache_;
};

} // namespace bonsai
