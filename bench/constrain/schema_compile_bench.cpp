// Compile time of JSON Schemas: one benchmark per NAME.json in the folder
// $BONSAI_SCHEMA_DIR, by default the Pydantic schemas of the corpus test
// (tests/server/schemas/pydantic); `node tests/server/schemas/dump.mjs DIR`
// (in a folder where the test's packages are installed) writes the whole
// corpus, zod's schemas included.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "bonsai/core/grammar.hpp"

namespace {

std::string read_text(const std::filesystem::path &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void compile(benchmark::State &state, const std::string &schema) {
  for (auto _ : state)
    benchmark::DoNotOptimize(&bonsai::Grammar::json_schema(schema).data());
}

// Registered before main() runs the benchmarks.
const int registered = [] {
  const char *dir = std::getenv("BONSAI_SCHEMA_DIR");
  const std::filesystem::path folder =
      dir != nullptr
          ? std::filesystem::path(dir)
          : std::filesystem::path(BONSAI_TEST_DATA_DIR) / ".." / "server" / "schemas" / "pydantic";
  if (!std::filesystem::is_directory(folder))
    return 0;
  int count = 0;
  for (const auto &entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".json")
      continue;
    benchmark::RegisterBenchmark(("BM_CompileSchema/" + entry.path().stem().string()).c_str(),
                                 compile, read_text(entry.path()))
        ->Unit(benchmark::kMillisecond);
    ++count;
  }
  return count;
}();

} // namespace
