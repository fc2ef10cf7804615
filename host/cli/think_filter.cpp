#include "think_filter.hpp"

namespace bonsai::cli {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
constexpr std::string_view kFaint = "\x1b[2m";
constexpr std::string_view kReset = "\x1b[0m";

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t partial_tag(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n))
      return n;
  return 0;
}

} // namespace

std::string ThinkFilter::emit(std::string_view text) const {
  if (!thinking_ || display_ == ThinkingDisplay::show)
    return std::string(text);
  return display_ == ThinkingDisplay::hide ? std::string() : std::string(text);
}

std::string ThinkFilter::push(std::string_view piece) {
  if (display_ == ThinkingDisplay::show)
    return std::string(piece);
  std::string text = pending_ + std::string(piece);
  pending_.clear();
  std::string out;
  for (;;) {
    // Hidden reasoning leaves no blank lines behind it.
    if (drop_newlines_) {
      const size_t text_at = text.find_first_not_of('\n');
      text.erase(0, text_at == std::string::npos ? text.size() : text_at);
      drop_newlines_ = text.empty();
    }
    const std::string_view tag = thinking_ ? kClose : kOpen;
    const size_t at = text.find(tag);
    if (at == std::string::npos)
      break;
    out += emit(std::string_view(text).substr(0, at));
    if (!thinking_) { // the tag itself shows in the reasoning's style
      thinking_ = true;
      if (display_ == ThinkingDisplay::dim)
        out += std::string(kFaint) + std::string(tag);
    } else {
      if (display_ == ThinkingDisplay::dim)
        out += std::string(tag) + std::string(kReset);
      thinking_ = false;
    }
    text.erase(0, at + tag.size());
    drop_newlines_ = !thinking_ && display_ == ThinkingDisplay::hide;
  }
  const size_t keep = partial_tag(text, thinking_ ? kClose : kOpen);
  pending_ = text.substr(text.size() - keep);
  out += emit(std::string_view(text).substr(0, text.size() - keep));
  return out;
}

std::string ThinkFilter::finish() {
  std::string out = emit(pending_);
  pending_.clear();
  if (thinking_ && display_ == ThinkingDisplay::dim)
    out += kReset;
  thinking_ = false;
  return out;
}

} // namespace bonsai::cli
