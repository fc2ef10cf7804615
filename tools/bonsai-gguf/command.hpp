#pragma once
// bonsai-gguf subcommands register themselves here, one file per subcommand.
#include <string>
#include <vector>

namespace bonsai::tools {

struct Command {
  const char *name;    // "info", "tokenize", ...
  const char *summary; // one line for the usage text
  // Receives the arguments after the subcommand name. Returns the exit code;
  // may throw: main reports a UsageError with exit code 2, anything else 1.
  int (*run)(const std::vector<std::string> &args);
};

// Called from a static initializer in each subcommand's file.
bool register_command(const Command &command);
const std::vector<Command> &commands();

} // namespace bonsai::tools
