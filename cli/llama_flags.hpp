#pragma once
// llama.cpp's flags as people type them (-ngl 99, -fa, -cnv, -tb 2, -ub 512,
// -sys TEXT), translated into bonsai's before parsing. Flags that mean
// something here become bonsai's own; the others are dropped with a one-line
// note, instead of being misread as a short flag plus a value (-fa used to
// read as "-f a").
#include <functional>
#include <string>
#include <vector>

namespace bonsai::cli {

// What -ngl N > 0 becomes: the GPU when one is usable, else the CPU, as
// llama.cpp runs on the CPU when it finds no GPU.
inline constexpr const char *kGpuLayersBackend = "cuda,cpu";

struct TranslatedArgs {
  std::vector<std::string> args;  // what boost::program_options parses
  std::vector<std::string> notes; // e.g. "-fa: attention is always fused in bonsai; ignored"
  // The last -ngl N > 0 as typed ("-ngl 99"), for the note when no GPU is
  // found; "" when none was given.
  std::string gpu_request;
};

// What the translation needs to know about the subcommand's own flags.
struct FlagSchema {
  // Whether the command has the option spelled `token` ("--backend", "-m").
  std::function<bool(const std::string &token)> has;
  // Whether the option spelled `token` ("-m", "--model") takes a value, so
  // that its value is passed through untouched.
  std::function<bool(const std::string &token)> takes_value;
};

// Throws UsageError for a llama.cpp flag without its value, or a -ngl value
// that is not a whole number.
TranslatedArgs translate_llama_flags(const std::vector<std::string> &args,
                                     const FlagSchema &schema);

} // namespace bonsai::cli
