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

std::optional<ThinkingDisplay> parse_thinking_display(const std::string &choice, bool terminal) {
  if (choice.empty())
    return terminal ? ThinkingDisplay::dim : ThinkingDisplay::show;
  if (choice == "show")
    return ThinkingDisplay::show;
  if (choice == "dim")
    return ThinkingDisplay::dim;
  if (choice == "hide")
    return ThinkingDisplay::hide;
  return std::nullopt;
}

std::string ThinkFilter::emit(std::string_view text) const {
  return thinking_ && display_ == ThinkingDisplay::hide ? std::string() : std::string(text);
}

// Called after thinking_ has changed: the tag belongs to the reasoning.
std::string ThinkFilter::tag_text(std::string_view tag) const {
  switch (display_) {
  case ThinkingDisplay::show:
    break;
  case ThinkingDisplay::dim:
    return thinking_ ? std::string(kFaint) + std::string(tag)
                     : std::string(tag) + std::string(kReset);
  case ThinkingDisplay::hide:
    return std::string();
  }
  return std::string(tag);
}

// Every mode tracks the tags, even `show`, so that in_reasoning() holds.
std::string ThinkFilter::push(std::string_view piece) {
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
    thinking_ = !thinking_;
    out += tag_text(tag);
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
  return out;
}

} // namespace bonsai::cli
