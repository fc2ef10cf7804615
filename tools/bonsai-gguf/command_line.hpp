#pragma once
// The option table of one bonsai-gguf subcommand, with the `bonsai` program's
// conventions: the GGUF file as the first word or as -m/--model FILE,
// --help on stdout, no abbreviated flags, and every command-line mistake a
// UsageError (exit 2; a file that cannot be read is a runtime error, exit 1).
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "bonsai/core/error.hpp"

namespace bonsai::tools {

namespace po = boost::program_options;

// A bad flag, bad value or missing argument; main exits with 2.
class UsageError : public Error {
public:
  using Error::Error;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitUsage = 2;

class CommandLine {
public:
  // `synopsis` follows "usage: bonsai-gguf " in --help; `about`, if any, is
  // printed under it.
  CommandLine(std::string command, std::string synopsis, std::string about = {});

  po::options_description_easy_init add_options();
  // The GGUF file this command reads: -m/--model FILE, else the first word.
  CommandLine &model_file(std::string &path, const char *help);

  // Parses the arguments after the subcommand name. Returns false when
  // --help was printed. Throws UsageError.
  bool parse(const std::vector<std::string> &args);
  bool given(const std::string &name) const;
  const po::variables_map &values() const { return values_; }

  // The next word outside any flag; a UsageError naming `what` when none is
  // left (`example` shows how to pass it).
  std::string take_word(const std::string &what, const std::string &example);
  // A UsageError when words are left over; `hint` says where such a value
  // belongs instead (default: that every value belongs to a flag).
  void no_more_words(const std::string &hint = {}) const;
  [[noreturn]] void fail(const std::string &message) const;

private:
  std::string command_;
  std::string synopsis_;
  std::string about_;
  po::options_description options_;
  po::variables_map values_;
  std::string *model_path_ = nullptr;
  std::vector<std::string> words_; // positional words not used yet
};

} // namespace bonsai::tools
