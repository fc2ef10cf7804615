#pragma once
// Helpers for the grammar tests: whole-text and prefix checks, and walks
// that check the matcher's promises: every state it keeps can be completed,
// and min_bytes_to_complete() is exact (a completion of exactly that many
// bytes exists).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>

#include "bonsai/core/grammar.hpp"

namespace bonsai::test {

// The whole text is accepted and complete.
inline bool matches(const Grammar &g, std::string_view text) {
  GrammarMatcher m(g);
  return m.advance(text) && m.complete();
}

// The text is a prefix of something valid.
inline bool prefix_ok(const Grammar &g, std::string_view text) {
  GrammarMatcher m(g);
  return m.advance(text);
}

inline Grammar schema(const std::string &text) {
  return Grammar::json_schema(text);
}

// The printable bytes and the UTF-8 ones, in an order a walk tries them.
inline std::string walk_alphabet() {
  std::string out;
  for (int b = 0x20; b < 0x7F; ++b)
    out.push_back(static_cast<char>(b));
  out += "\n\t";
  for (int b = 0x80; b < 0x100; ++b)
    out.push_back(static_cast<char>(b));
  return out;
}

// From `prefix`, takes at each step the first byte that brings the end one
// byte closer; the reply must be complete after exactly the bytes
// min_bytes_to_complete() promised. Returns the completed text ("" and a
// test failure when a promise breaks).
inline std::string shortest_completion(const Grammar &g, std::string_view prefix) {
  GrammarMatcher m(g);
  if (!m.advance(prefix)) {
    ADD_FAILURE() << "prefix refused: " << prefix;
    return "";
  }
  std::string text(prefix);
  static const std::string alphabet = walk_alphabet();
  for (int32_t need = m.min_bytes_to_complete(); need > 0; need = m.min_bytes_to_complete()) {
    bool stepped = false;
    for (const char c : alphabet) {
      GrammarMatcher trial = m;
      if (trial.advance(std::string_view(&c, 1)) && trial.min_bytes_to_complete() == need - 1) {
        m = trial;
        text.push_back(c);
        stepped = true;
        break;
      }
    }
    if (!stepped) {
      ADD_FAILURE() << "no byte brings the end closer after " << text << " (" << need
                    << " bytes promised)";
      return "";
    }
  }
  EXPECT_TRUE(m.complete()) << text;
  return text;
}

// A random text of the grammar: random allowed bytes (spaces rarely) for
// up to `steps` bytes, then the shortest completion. Every state on the
// way must have some allowed byte or be complete.
inline std::string random_text(const Grammar &g, uint32_t seed, int steps) {
  std::mt19937 rng(seed);
  GrammarMatcher m(g);
  std::string text;
  static const std::string alphabet = walk_alphabet();
  for (int i = 0; i < steps; ++i) {
    std::string allowed;
    for (const char c : alphabet) {
      if ((c == ' ' || c == '\n' || c == '\t') && rng() % 8 != 0)
        continue;
      GrammarMatcher trial = m;
      if (trial.advance(std::string_view(&c, 1)))
        allowed.push_back(c);
    }
    if (allowed.empty()) {
      EXPECT_TRUE(m.complete()) << "stuck after " << text;
      break;
    }
    if (m.complete() && rng() % 4 == 0)
      break;
    const char c = allowed[rng() % allowed.size()];
    EXPECT_TRUE(m.advance(std::string_view(&c, 1)));
    text.push_back(c);
    EXPECT_LT(m.min_bytes_to_complete(), 1 << 20) << text;
  }
  return shortest_completion(g, text);
}

} // namespace bonsai::test
