#pragma once
// Finds added tokens (`<|im_start|>`, `<think>`, ...) in raw text so they are
// emitted as single ids and never reach the pre-tokenizer. Matching is
// leftmost, then longest, like Hugging Face's added-vocabulary trie.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::tokenizer_detail {

class AddedTokenMatcher {
public:
  struct Segment {
    std::string_view text;
    int32_t id; // the added token's id, or -1 for plain text between matches
  };

  // `text` must not be empty. Call finish() after the last add().
  void add(std::string text, int32_t id);
  void finish();
  bool empty() const { return entries_.empty(); }

  // Appends the segments of `text` in order; they cover it exactly.
  void split(std::string_view text, std::vector<Segment> &out) const;

private:
  struct Entry {
    std::string text;
    int32_t id;
  };
  // Index of the longest entry matching at `pos`, or -1.
  int32_t match_at(std::string_view text, size_t pos) const;

  std::vector<Entry> entries_;
  // Entries starting with each byte, longest first: most bytes start none.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

} // namespace bonsai::tokenizer_detail
