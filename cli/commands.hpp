#pragma once
// The subcommands of `bonsai`. Each receives the arguments after its name and
// returns the exit code; errors are thrown (UsageError -> 2, others -> 1) and
// reported by main().
#include <string>
#include <vector>

namespace bonsai::cli {

using Args = std::vector<std::string>;

int run_command(const Args &args);      // bonsai run
int chat_command(const Args &args);     // bonsai chat
int eval_command(const Args &args);     // bonsai eval
int info_command(const Args &args);     // bonsai info
int backends_command(const Args &args); // bonsai backends
int bench_command(const Args &args);    // bonsai bench
int serve_command(const Args &args);    // bonsai serve

} // namespace bonsai::cli
