// bonsai-gguf: inspect GGUF files, tokenize with their vocabulary, make
// synthetic models. Each subcommand lives in its own cmd_*.cpp file.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.hpp"
#include "command_line.hpp"

namespace bonsai::tools {

std::vector<Command> &registry() {
  static std::vector<Command> all;
  return all;
}

bool register_command(const Command &command) {
  registry().push_back(command);
  return true;
}

const std::vector<Command> &commands() {
  return registry();
}

} // namespace bonsai::tools

namespace {

void print_usage(std::FILE *to) {
  std::fprintf(to, "usage: bonsai-gguf <command> [options]\n\ncommands:\n");
  for (const auto &c : bonsai::tools::commands())
    std::fprintf(to, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(to, "\nRun 'bonsai-gguf <command> --help' for a command's options.\n");
}

} // namespace

int main(int argc, char **argv) {
  using namespace bonsai::tools;
  if (argc < 2) {
    print_usage(stderr);
    return kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return kExitOk;
  }
  for (const auto &c : commands()) {
    if (name != c.name)
      continue;
    try {
      return c.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const UsageError &e) {
      std::fprintf(stderr, "bonsai-gguf %s: error: %s\n", c.name, e.what());
      return kExitUsage;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "bonsai-gguf %s: error: %s\n", c.name, e.what());
      return kExitRuntimeError;
    }
  }
  std::fprintf(stderr, "bonsai-gguf: error: unknown command '%s' (see 'bonsai-gguf --help')\n",
               name.c_str());
  return kExitUsage;
}
