// Replays fuzz inputs without libFuzzer (any compiler): every file named on
// the command line, and every file inside each folder named, goes through
// LLVMFuzzerTestOneInput once. A bug aborts or crashes the program, so ctest
// fails; under BONSAI_SANITIZE the sanitizers check each replay too.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz_support.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_file(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Files to replay, sorted so failures reproduce in the same order.
std::vector<fs::path> inputs_of(const fs::path &arg) {
  std::vector<fs::path> files;
  if (fs::is_directory(arg)) {
    for (const auto &entry : fs::directory_iterator(arg))
      if (entry.is_regular_file() && entry.path().filename().string().front() != '.' &&
          entry.path().extension() != ".md")
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(arg);
  }
  return files;
}

} // namespace

int main(int argc, char **argv) {
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    if (!fs::exists(argv[i])) {
      std::fprintf(stderr, "%s: no such file or folder\n", argv[i]);
      return 2;
    }
    for (const fs::path &file : inputs_of(argv[i])) {
      const std::vector<uint8_t> bytes = read_file(file);
      std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      ++replayed;
    }
  }
  std::printf("replayed %zu inputs, no failure\n", replayed);
  return 0;
}
