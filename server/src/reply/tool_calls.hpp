#pragma once
// Finds the tool calls in a chat reply's content as it streams (docs/server.md,
// "Tools"): each `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
// (Qwen3) or `<tool_call><function=NAME><parameter=P>VALUE</parameter>...
// </function></tool_call>` (qwen35-family templates) becomes a call with an
// id; the text around the calls stays content. A block that does not parse
// stays content, tags and all, never an error.
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::server {

struct ParsedToolCall {
  std::string id;        // "call_" and 24 random letters and digits
  std::string name;      // the function's name
  std::string arguments; // a JSON object, as text
};

struct ContentPiece {
  std::string content;
  std::vector<ParsedToolCall> calls;
};

class ToolCallSplit {
public:
  ContentPiece feed(std::string_view content);
  ContentPiece finish(); // an unclosed block: a call if its JSON is whole, else content
  size_t calls_found() const { return calls_found_; }

private:
  void run(ContentPiece &out, bool at_end);
  // The call in `body` (between the tags), or false when it is not one.
  bool parse_call(std::string_view body, ParsedToolCall &call) const;

  bool in_call_ = false;
  bool skip_space_ = false;        // after a call: white space before the next is dropped
  std::string held_;               // unread text: may be the start of a tag, or a call's body
  std::string spaces_;             // white space that is content only if text follows
  std::string spaces_before_call_; // content again if the call does not parse
  size_t calls_found_ = 0;
};

} // namespace bonsai::server
