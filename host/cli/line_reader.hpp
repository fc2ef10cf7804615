#pragma once
// Reads the chat's input lines: with line editing and history (libedit) when
// stdin and stdout are a terminal, plain lines otherwise. A line that ends in
// a backslash continues on the next one.
#include <optional>
#include <string>

namespace bonsai::cli {

class LineReader {
public:
  LineReader();
  // The next input, without its line break(s); nullopt at end of input.
  std::optional<std::string> read(const char *prompt);
  bool interactive() const { return interactive_; }

private:
  std::optional<std::string> read_one(const char *prompt);
  bool interactive_ = false;
};

} // namespace bonsai::cli
