#pragma once
// A mistake on the command line (bad flag, bad value, missing argument):
// reported like any error but with exit code 2.
#include "bonsai/core/error.hpp"

namespace bonsai::cli {

class UsageError : public Error {
public:
  using Error::Error;
};

// Exit codes of the program.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130; // 128 + SIGINT, as shells report it

} // namespace bonsai::cli
