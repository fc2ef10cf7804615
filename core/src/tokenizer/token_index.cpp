#include "token_index.hpp"

#include <functional>

namespace bonsai::tokenizer_detail {

uint64_t TokenIndex::hash(std::string_view text) {
  return std::hash<std::string_view>{}(text)*0x9E3779B97F4A7C15ull; // spread the low bits
}

void TokenIndex::build(const std::vector<std::string> &tokens) {
  tokens_ = &tokens;
  size_t capacity = 16;
  while (capacity < tokens.size() * 2) // load factor <= 0.5
    capacity *= 2;
  slots_.assign(capacity, 0);
  mask_ = capacity - 1;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const uint64_t h = hash(tokens[id]);
    for (size_t i = (h >> 32) & mask_;; i = (i + 1) & mask_) {
      const uint64_t slot = slots_[i];
      if (slot == 0) {
        slots_[i] = (h & 0xFFFFFFFF00000000ull) | (id + 1);
        break;
      }
      if ((slot >> 32) == (h >> 32) && tokens[(slot & 0xFFFFFFFFu) - 1] == tokens[id])
        break; // a repeated spelling keeps the first id
    }
  }
}

int32_t TokenIndex::find(std::string_view text) const {
  if (slots_.empty())
    return -1;
  const uint64_t h = hash(text);
  for (size_t i = (h >> 32) & mask_;; i = (i + 1) & mask_) {
    const uint64_t slot = slots_[i];
    if (slot == 0)
      return -1;
    const auto id = static_cast<int32_t>((slot & 0xFFFFFFFFu) - 1);
    if ((slot >> 32) == (h >> 32) && (*tokens_)[static_cast<size_t>(id)] == text)
      return id;
  }
}

} // namespace bonsai::tokenizer_detail
