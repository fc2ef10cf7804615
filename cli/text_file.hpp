#pragma once
// Text files given on the command line (a prompt, a schema, a saved chat),
// read whole but never without bound: an endless stream (/dev/zero) is
// refused at 64 MiB, more text than any context holds.
#include <istream>
#include <string>

#include "bonsai/core/error.hpp"

namespace bonsai::cli {

// `path` read whole; bonsai::Error naming it and `flag` when it is a
// directory, cannot be opened or read, is too large, or is empty (unless
// `empty_ok`).
std::string read_text_file(const std::string &path, const char *flag, bool empty_ok = false);

// `in` read whole, up to the same bound; `what` names it in errors.
std::string read_stream(std::istream &in, const std::string &what);

} // namespace bonsai::cli
