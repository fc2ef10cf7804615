#include "token_list.hpp"

#include <charconv>

#include "usage_error.hpp"

namespace bonsai::cli {

std::vector<int32_t> parse_token_list(const std::string &text, const std::string &flag) {
  std::vector<int32_t> ids;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    int32_t id = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || id < 0)
      throw UsageError(flag + " expects comma-separated token ids (integers >= 0), got '" + item +
                       "' in '" + text + "'");
    ids.push_back(id);
    if (comma == std::string::npos)
      return ids;
    start = comma + 1;
  }
}

std::string join_token_list(const std::vector<int32_t> &ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0)
      out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

} // namespace bonsai::cli
