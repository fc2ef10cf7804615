#pragma once
// Vocabulary entry -> id. An open-addressing table of ids (the strings stay in
// the vocabulary): loading a 150k-token vocabulary does ~600k lookups, where
// std::unordered_map's per-node allocations and pointer chasing dominated.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::tokenizer_detail {

class TokenIndex {
public:
  // Indexes `tokens`, which must outlive the index and stay unmodified. When
  // two entries are spelled the same, the lower id wins.
  void build(const std::vector<std::string> &tokens);
  int32_t find(std::string_view text) const; // -1 when absent

private:
  static uint64_t hash(std::string_view text);

  const std::vector<std::string> *tokens_ = nullptr;
  // (upper 32 bits of the hash) << 32 | (id + 1); 0 marks an empty slot. The
  // stored hash bits skip most string comparisons on collisions.
  std::vector<uint64_t> slots_;
  size_t mask_ = 0;
};

} // namespace bonsai::tokenizer_detail
