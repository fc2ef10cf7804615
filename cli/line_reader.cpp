#include "line_reader.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include <editline/readline.h>

namespace bonsai::cli {

LineReader::LineReader()
    : interactive_(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)),
      prompt_to_(isatty(STDIN_FILENO) ? (interactive_ ? stdout : stderr) : nullptr) {}

void LineReader::end_prompt_line() const {
  if (prompt_to_ != nullptr)
    std::fputs("\n", prompt_to_);
}

std::optional<std::string> LineReader::read_one(const char *prompt) {
  if (interactive_) {
    std::unique_ptr<char, decltype(&std::free)> line(readline(prompt), &std::free);
    if (!line)
      return std::nullopt;
    return std::string(line.get());
  }
  if (prompt_to_ != nullptr) {
    std::fputs(prompt, prompt_to_);
    std::fflush(prompt_to_);
  }
  std::string line;
  if (!std::getline(std::cin, line))
    return std::nullopt;
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  return line;
}

std::optional<std::string> LineReader::read(const char *prompt) {
  std::optional<std::string> text = read_one(prompt);
  while (text && !text->empty() && text->back() == '\\') {
    text->back() = '\n';
    const std::optional<std::string> more = read_one("... ");
    if (!more)
      break;
    *text += *more;
  }
  // History holds whole entries, so the up arrow brings a multi-line one back.
  if (text && interactive_ && text->find_first_not_of(" \t\n") != std::string::npos)
    add_history(text->c_str());
  return text;
}

} // namespace bonsai::cli
