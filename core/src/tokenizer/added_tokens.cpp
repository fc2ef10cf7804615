#include "added_tokens.hpp"

#include <algorithm>

namespace bonsai::tokenizer_detail {

void AddedTokenMatcher::add(std::string text, int32_t id) {
  entries_.push_back(Entry{std::move(text), id});
}

void AddedTokenMatcher::finish() {
  for (auto &bucket : by_first_byte_)
    bucket.clear();
  for (uint32_t i = 0; i < entries_.size(); ++i)
    by_first_byte_[static_cast<unsigned char>(entries_[i].text[0])].push_back(i);
  for (auto &bucket : by_first_byte_) {
    // Stable: of two tokens spelled the same, the lower id wins.
    std::stable_sort(bucket.begin(), bucket.end(), [this](uint32_t a, uint32_t b) {
      return entries_[a].text.size() > entries_[b].text.size();
    });
  }
}

int32_t AddedTokenMatcher::match_at(std::string_view text, size_t pos) const {
  const std::string_view rest = text.substr(pos);
  for (uint32_t index : by_first_byte_[static_cast<unsigned char>(rest[0])])
    if (rest.starts_with(entries_[index].text))
      return static_cast<int32_t>(index);
  return -1;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment> &out) const {
  size_t plain_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (by_first_byte_[static_cast<unsigned char>(text[pos])].empty()) {
      ++pos;
      continue;
    }
    const int32_t index = match_at(text, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    if (pos > plain_start)
      out.push_back(Segment{text.substr(plain_start, pos - plain_start), -1});
    const Entry &entry = entries_[static_cast<size_t>(index)];
    out.push_back(Segment{text.substr(pos, entry.text.size()), entry.id});
    pos += entry.text.size();
    plain_start = pos;
  }
  if (plain_start < text.size())
    out.push_back(Segment{text.substr(plain_start), -1});
}

} // namespace bonsai::tokenizer_detail
