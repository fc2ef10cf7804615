#include "generation/ngram_draft.hpp"

#include <algorithm>

namespace bonsai::host {

std::vector<int32_t> ngram_draft(std::span<const int32_t> context, int32_t n, int32_t max) {
  const auto len = static_cast<int64_t>(context.size());
  if (n <= 0 || max <= 0 || len <= n)
    return {};
  const auto tail = context.subspan(static_cast<size_t>(len - n));
  // The most recent earlier match wins: it is the likeliest to continue.
  for (int64_t start = len - n - 1; start >= 0; --start) {
    if (!std::equal(tail.begin(), tail.end(), context.begin() + start))
      continue;
    const int64_t from = start + n;
    const int64_t count = std::min<int64_t>(max, len - from);
    return std::vector<int32_t>(context.begin() + from, context.begin() + from + count);
  }
  return {};
}

} // namespace bonsai::host
