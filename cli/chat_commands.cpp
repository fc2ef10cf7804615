#include "chat_commands.hpp"

namespace bonsai::cli {
namespace {

ChatCommand make(ChatCommand::Kind kind, std::string argument = {}) {
  return {kind, std::move(argument)};
}

} // namespace

ChatCommand parse_chat_command(const std::string &line) {
  if (line.rfind("//", 0) == 0)
    return make(ChatCommand::message, line.substr(1));
  if (line.empty() || line[0] != '/')
    return make(ChatCommand::message, line);
  const size_t space = line.find(' ');
  const std::string name = line.substr(0, space);
  std::string argument = space == std::string::npos ? "" : line.substr(space + 1);
  const size_t first = argument.find_first_not_of(' ');
  argument.erase(0, first == std::string::npos ? argument.size() : first);
  while (!argument.empty() && argument.back() == ' ')
    argument.pop_back();

  const auto needs_file = [&](ChatCommand::Kind kind) {
    return argument.empty() ? make(ChatCommand::invalid, name + " needs a file name")
                            : make(kind, argument);
  };
  if (name == "/exit" || name == "/quit")
    return make(ChatCommand::exit);
  if (name == "/clear" || name == "/reset")
    return make(ChatCommand::clear);
  if (name == "/help" || name == "/?")
    return make(ChatCommand::help);
  if (name == "/system")
    return make(ChatCommand::system, argument);
  if (name == "/think") {
    if (!argument.empty() && argument != "on" && argument != "off")
      return make(ChatCommand::invalid, "/think takes on or off, not '" + argument + "'");
    return make(ChatCommand::think, argument);
  }
  if (name == "/save")
    return needs_file(ChatCommand::save);
  if (name == "/load")
    return needs_file(ChatCommand::load);
  return make(ChatCommand::invalid, "unknown command " + name +
                                        " (/help lists them; start a message with // to send "
                                        "a line that begins with /)");
}

const char *chat_help() {
  return "commands:\n"
         "  /help            this list\n"
         "  /clear, /reset   start the conversation over (the system message stays)\n"
         "  /system [TEXT]   show the system message, or set it (the turns stay)\n"
         "  /think [on|off]  let the model reason first, or answer directly (no value: toggle)\n"
         "  /save FILE       write the conversation as JSON\n"
         "  /load FILE       replace the conversation with one saved by /save\n"
         "  /exit, /quit     leave (also Ctrl-D)\n"
         "A line ending in \\ continues on the next line; // at the start sends a line that\n"
         "begins with /. Ctrl-C stops a reply; at the prompt it leaves.\n";
}

} // namespace bonsai::cli
