#pragma once
// The chat's slash commands: what a line asks for, parsed apart from doing it.
#include <string>

namespace bonsai::cli {

struct ChatCommand {
  enum Kind {
    message, // not a command: send `argument` as the user's turn
    exit,    // /exit, /quit
    clear,   // /clear, /reset
    help,    // /help, /?
    system,  // /system [TEXT]: show, or set, the system message
    think,   // /think [on|off]: toggle, or set, reasoning
    save,    // /save FILE
    load,    // /load FILE
    invalid, // a mistake; `argument` says what is wrong
  };
  Kind kind = message;
  std::string argument;
};

// "//text" sends "/text"; "/name ARG" is a command.
ChatCommand parse_chat_command(const std::string &line);

// The /help text.
const char *chat_help();

} // namespace bonsai::cli
