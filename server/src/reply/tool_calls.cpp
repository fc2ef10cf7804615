#include "reply/tool_calls.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/api_error.hpp"
#include "reply/response_ids.hpp"
#include "reply/tag_scan.hpp"
#include "request/json_limits.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

// What a model may nest in a call: far more than any real arguments, far less
// than what would strain the parser.
JsonLimits call_limits() {
  JsonLimits limits;
  limits.max_depth = 32;
  return limits;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

// A parameter's text as a JSON value: JSON when it is some (a number, true,
// an object, a quoted string), else the text as a string.
json parameter_value(std::string_view text) {
  try {
    return parse_json_within(text, call_limits());
  } catch (const ApiError &) {
    return std::string(text);
  }
}

// The XML form of qwen35-family templates:
// <function=NAME><parameter=P>VALUE</parameter>...</function>.
bool parse_xml_call(std::string_view body, std::string &name, json &arguments) {
  constexpr std::string_view kFunction = "<function=", kEndFunction = "</function>";
  constexpr std::string_view kParameter = "<parameter=", kEndParameter = "</parameter>";
  body = trim(body);
  if (!body.starts_with(kFunction) || !body.ends_with(kEndFunction))
    return false;
  body = body.substr(kFunction.size(), body.size() - kFunction.size() - kEndFunction.size());
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos || name_end == 0)
    return false;
  name = std::string(body.substr(0, name_end));
  arguments = json::object();
  for (std::string_view rest = trim(body.substr(name_end + 1)); !rest.empty(); rest = trim(rest)) {
    if (!rest.starts_with(kParameter))
      return false;
    rest.remove_prefix(kParameter.size());
    const size_t key_end = rest.find('>');
    const size_t value_end = rest.find(kEndParameter);
    if (key_end == std::string_view::npos || key_end == 0 || value_end == std::string_view::npos ||
        value_end < key_end)
      return false;
    std::string_view value = rest.substr(key_end + 1, value_end - key_end - 1);
    if (value.starts_with('\n')) // the template's line breaks around a value
      value.remove_prefix(1);
    if (value.ends_with('\n'))
      value.remove_suffix(1);
    arguments[std::string(rest.substr(0, key_end))] = parameter_value(value);
    rest.remove_prefix(value_end + kEndParameter.size());
  }
  return true;
}

} // namespace

bool ToolCallSplit::parse_call(std::string_view body, ParsedToolCall &call) const {
  std::string xml_name;
  json xml_arguments;
  if (parse_xml_call(body, xml_name, xml_arguments)) {
    call.name = std::move(xml_name);
    call.arguments = xml_arguments.dump(-1, ' ', false, json::error_handler_t::replace);
    call.id = new_response_id("call_");
    return true;
  }
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
  else if (arguments->is_string()) { // some models quote the arguments
    // A client parses them as an object: text that is not one is no call.
    json quoted;
    try {
      quoted = parse_json_within(arguments->get_ref<const std::string &>(), call_limits());
    } catch (const ApiError &) {
      return false;
    }
    if (!quoted.is_object())
      return false;
    call.arguments = quoted.dump(-1, ' ', false, json::error_handler_t::replace);
  } else {
    return false;
  }
  call.id = new_response_id("call_");
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
