#include "tool_calls.hpp"

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "api_error.hpp"
#include "json_limits.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// How many chars at the end of `text` are the start of `tag` (not all of it).
size_t partial_tag_at_end(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n))
      return n;
  return 0;
}

std::string new_call_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i)
    id += kChars[rng() % kChars.size()];
  return id;
}

// What a model may nest in a call: far more than any real arguments, far less
// than what would strain the parser.
JsonLimits call_limits() {
  JsonLimits limits;
  limits.max_depth = 32;
  return limits;
}

} // namespace

bool ToolCallSplit::parse_call(std::string_view body, ParsedToolCall &call) const {
  json value;
  try {
    value = parse_json_within(body, call_limits());
  } catch (const ApiError &) {
    return false;
  }
  if (!value.is_object())
    return false;
  const auto name = value.find("name");
  const auto arguments = value.find("arguments");
  if (name == value.end() || !name->is_string() || name->get_ref<const std::string &>().empty())
    return false;
  call.name = name->get<std::string>();
  if (arguments == value.end())
    call.arguments = "{}";
  else if (arguments->is_object())
    call.arguments = arguments->dump(-1, ' ', false, json::error_handler_t::replace);
  else if (arguments->is_string()) // some models quote the arguments
    call.arguments = arguments->get<std::string>();
  else
    return false;
  call.id = new_call_id();
  return true;
}

ContentPiece ToolCallSplit::feed(std::string_view content) {
  held_.append(content);
  ContentPiece out;
  run(out, false);
  return out;
}

ContentPiece ToolCallSplit::finish() {
  ContentPiece out;
  run(out, true);
  if (!spaces_.empty() && calls_found_ == 0)
    out.content += spaces_; // a reply without calls keeps its white space
  spaces_.clear();
  return out;
}

void ToolCallSplit::run(ContentPiece &out, bool at_end) {
  for (;;) {
    if (!in_call_) {
      const size_t open = held_.find(kOpen);
      const size_t text_end = open != std::string::npos ? open
                              : at_end                  ? held_.size()
                                       : held_.size() - partial_tag_at_end(held_, kOpen);
      // Text before a call (or the end): white space is held until text follows.
      for (size_t i = 0; i < text_end; ++i) {
        const char c = held_[i];
        if (is_space(c)) {
          if (!skip_space_)
            spaces_ += c;
          continue;
        }
        skip_space_ = false;
        out.content += spaces_;
        spaces_.clear();
        out.content += c;
      }
      held_.erase(0, text_end);
      if (open == std::string::npos)
        return;
      held_.erase(0, kOpen.size());
      // White space before a call is not content, unless the call fails.
      spaces_before_call_ = std::move(spaces_);
      spaces_.clear();
      in_call_ = true;
      continue;
    }
    const size_t close = held_.find(kClose);
    if (close == std::string::npos && !at_end)
      return; // the call's body is still coming
    const std::string_view body(held_.data(), close == std::string::npos ? held_.size() : close);
    ParsedToolCall call;
    if (parse_call(body, call)) {
      out.calls.push_back(std::move(call));
      ++calls_found_;
      skip_space_ = true;
    } else {
      out.content += spaces_before_call_;
      out.content.append(kOpen).append(body);
      if (close != std::string::npos)
        out.content.append(kClose);
    }
    held_.erase(0, close == std::string::npos ? held_.size() : close + kClose.size());
    spaces_before_call_.clear();
    in_call_ = false;
    if (held_.empty())
      return;
  }
}

} // namespace bonsai::server
