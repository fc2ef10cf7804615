#pragma once
// Formatting of `bonsai bench` results in llama-bench's shape, so our rows can
// be put next to llama.cpp's: a Markdown table or JSON for scripts.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bonsai::cli {

struct BenchRow {
  std::string model;           // file name
  uint64_t size_bytes;         // tensor bytes, as llama-bench's size column
  uint64_t n_params;           // tensor elements
  std::string backend;         // plugin name
  int32_t threads;             // worker threads asked for (0 = the plugin's choice)
  std::string test;            // "pp512", "tg128"
  int32_t n_tokens;            // tokens processed per repetition
  std::vector<double> seconds; // one entry per measured repetition
};

struct BenchStats {
  double mean_tps = 0;   // mean of the per-repetition tokens/s
  double stddev_tps = 0; // sample standard deviation (0 for one repetition)
  double median_tps = 0;
};

BenchStats summarize(const BenchRow &row);

// -o: md (llama-bench's table), csv, json (one array), jsonl (one object a
// line). Rows are printed one by one as they are measured:
// header, then bench_row for each (first = the first row), then footer.
enum class BenchFormat { md, csv, json, jsonl };
std::optional<BenchFormat> parse_bench_format(const std::string &name);
std::string bench_header(BenchFormat format);
std::string bench_row(BenchFormat format, const BenchRow &row, bool first);
std::string bench_footer(BenchFormat format);

} // namespace bonsai::cli
