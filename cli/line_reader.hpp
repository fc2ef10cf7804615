#pragma once
// Reads the chat's input lines: with line editing and history (libedit) when
// stdin and stdout are a terminal, plain lines otherwise. A line that ends in
// a backslash continues on the next one. Prompts are for a person typing:
// none when stdin is not a terminal, and on stderr when only stdout is
// redirected, so that stdout holds the replies alone.
#include <cstdio>
#include <optional>
#include <string>

namespace bonsai::cli {

class LineReader {
public:
  LineReader();
  // The next input, without its line break(s); nullopt at end of input.
  std::optional<std::string> read(const char *prompt);
  bool interactive() const { return interactive_; }
  // Ends the prompt's line after end of input (Ctrl-D), where one was shown.
  void end_prompt_line() const;

private:
  std::optional<std::string> read_one(const char *prompt);
  bool interactive_ = false;
  std::FILE *prompt_to_ = nullptr; // where plain reads show the prompt (nullptr: nowhere)
};

} // namespace bonsai::cli
