// bonsai: run Bonsai (Qwen3, 1-bit / ternary) GGUF models from the command
// line. Each subcommand lives in its own cmd_*.cpp file.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "bonsai/bonsai_backend.h"
#include "bonsai/engine.hpp"
#include "commands.hpp"
#include "usage_error.hpp"

namespace {

struct Subcommand {
  const char *name;
  const char *summary;
  int (*run)(const bonsai::cli::Args &args);
};

constexpr Subcommand kSubcommands[] = {
    {"run", "generate a completion for one prompt, streamed to stdout", bonsai::cli::run_command},
    {"chat", "interactive multi-turn chat", bonsai::cli::chat_command},
    {"eval", "evaluate token ids: logits of every position, greedy continuation",
     bonsai::cli::eval_command},
    {"info", "describe a model file", bonsai::cli::info_command},
    {"backends", "list the backend plugins found and probe their devices",
     bonsai::cli::backends_command},
    {"bench", "measure prompt (ppN) and generation (tgN) speed, llama-bench style",
     bonsai::cli::bench_command},
    {"serve", "an OpenAI-compatible HTTP server with continuous batching",
     bonsai::cli::serve_command},
};

void print_usage(std::FILE *to) {
  std::fprintf(to, "usage: bonsai <command> [options]\n\ncommands:\n");
  for (const auto &c : kSubcommands)
    std::fprintf(to, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(to, "\nRun 'bonsai <command> --help' for the options of a command, 'bonsai "
                   "--version' for the versions of the program, its ABI and its plugins.\n");
}

// --version: the program, the plugin ABI it speaks, and the plugins found.
void print_version() {
  std::printf("bonsai %s (plugin ABI %d.%d)\n", BONSAI_VERSION_STRING, BONSAI_ABI_MAJOR,
              BONSAI_ABI_MINOR);
  const auto plugins = bonsai::list_plugins();
  std::printf("plugins:%s\n", plugins.empty() ? " none found" : "");
  for (const auto &p : plugins) {
    if (p.loaded)
      std::printf("  %-6s %s, ABI %u.%u, %s\n", p.name.c_str(), p.version.c_str(), p.abi_major,
                  p.abi_minor, p.path.c_str());
    else
      std::printf("  %-6s not loadable (%s), %s\n", p.name.c_str(), p.load_error.c_str(),
                  p.path.c_str());
  }
}

// "run, chat, ...": every command, from the table, so none is left out.
std::string command_names() {
  std::string names;
  for (const auto &c : kSubcommands)
    names += (names.empty() ? "" : ", ") + std::string(c.name);
  return names;
}

bool is_command(std::string_view name) {
  for (const auto &c : kSubcommands)
    if (name == c.name)
      return true;
  return false;
}

void report(const char *what) {
  std::fprintf(stderr, "bonsai: error: %s\n", what);
}

} // namespace

int main(int argc, char **argv) {
  using namespace bonsai::cli;
  if (argc < 2) {
    print_usage(stderr);
    return kExitUsage;
  }
  std::string_view name = argv[1];
  Args args(argv + 2, argv + argc);
  const bool help = name == "--help" || name == "-h" || name == "help";
  if (help && argc == 3 && is_command(argv[2])) { // "bonsai help run": that command's help
    name = argv[2];
    args = {"--help"};
  } else if ((help || name == "--version" || name == "version") && argc > 2) {
    const std::string message = "unexpected argument '" + std::string(argv[2]) + "' after " +
                                std::string(name) + " (see bonsai --help)";
    report(message.c_str());
    return kExitUsage;
  } else if (help) {
    print_usage(stdout);
    return kExitOk;
  } else if (name == "--version" || name == "version") {
    print_version();
    return kExitOk;
  }
  for (const auto &c : kSubcommands) {
    if (name != c.name)
      continue;
    try {
      return c.run(args);
    } catch (const UsageError &e) {
      report(e.what());
      return kExitUsage;
    } catch (const std::exception &e) {
      report(e.what());
      return kExitRuntimeError;
    }
  }
  const std::string message = "unknown command '" + std::string(name) +
                              "' (commands: " + command_names() + "; see bonsai --help)";
  report(message.c_str());
  return kExitUsage;
}
