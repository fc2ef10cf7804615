#include "text_file.hpp"

#include <filesystem>
#include <fstream>
#include <ios>

namespace bonsai::cli {
namespace {

// More text than any context holds: an endless stream (-f /dev/zero) stops
// here instead of filling the memory.
constexpr size_t kMaxTextBytes = size_t{64} << 20;

} // namespace

std::string read_stream(std::istream &in, const std::string &what) {
  std::string text;
  char chunk[1 << 16];
  try {
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
      text.append(chunk, static_cast<size_t>(in.gcount()));
      if (text.size() > kMaxTextBytes)
        throw Error(what + " holds more than 64 MiB, more text than any context holds");
    }
  } catch (const std::ios_base::failure &) { // libstdc++ throws on a failed read()
    in.setstate(std::ios::badbit);
  }
  if (in.bad())
    throw Error(what + ": error while reading");
  return text;
}

std::string read_text_file(const std::string &path, const char *flag, bool empty_ok) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw Error(path + ": is a directory, not the file " + flag + " takes");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open the file given to " + flag);
  std::string text = read_stream(in, path + " (given to " + flag + ")");
  if (text.empty() && !empty_ok)
    throw Error(path + ": the file given to " + flag + " is empty");
  return text;
}

} // namespace bonsai::cli
