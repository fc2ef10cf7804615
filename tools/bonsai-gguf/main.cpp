// bonsai-gguf: inspect GGUF files, tokenize with their vocabulary, make
// synthetic models. Each subcommand lives in its own cmd_*.cpp file.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command.hpp"

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

void print_usage() {
  std::fprintf(stderr, "usage: bonsai-gguf <command> [options]\n\ncommands:\n");
  for (const auto &c : bonsai::tools::commands())
    std::fprintf(stderr, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(stderr, "\nRun 'bonsai-gguf <command> --help' for a command's options.\n");
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  for (const auto &c : bonsai::tools::commands()) {
    if (name != c.name)
      continue;
    try {
      return c.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const std::exception &e) {
      std::fprintf(stderr, "bonsai-gguf %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "bonsai-gguf: unknown command '%s'\n\n", name.c_str());
  print_usage();
  return 2;
}
