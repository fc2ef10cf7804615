#pragma once
// Formatting of `bonsai bench` results in llama-bench's shape, so our rows can
// be put next to llama.cpp's: a Markdown table or JSON for scripts.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bonsai::cli {

// What `--membw` adds to a row: the machine's read bandwidth measured with
// the row's threads, and the bytes one generated token must read.
struct BandwidthFigures {
  double read_bytes_per_s = 0; // streaming read bandwidth, same threads
  double bytes_per_token = 0;  // weights (shared by -np sequences) + KV read; 0 for pp rows
};

struct BenchRow {
  std::string model;                         // file name
  uint64_t size_bytes;                       // tensor bytes, as llama-bench's size column
  uint64_t n_params;                         // tensor elements
  std::string backend;                       // plugin name
  int32_t threads;                           // worker threads asked for (0 = the plugin's choice)
  std::string test;                          // "pp512", "tg128"
  int32_t n_tokens;                          // tokens processed per repetition
  std::vector<double> seconds;               // one entry per measured repetition
  std::optional<BandwidthFigures> bandwidth; // with --membw
};

struct BenchStats {
  double mean_tps = 0;   // mean of the per-repetition tokens/s
  double stddev_tps = 0; // sample standard deviation (0 for one repetition)
  double median_tps = 0;
  // With bandwidth figures on a tg row: bandwidth / bytes per token, and the
  // median as a share of it (0 where they do not apply).
  double limit_tps = 0;
  double share_of_limit = 0;
};

BenchStats summarize(const BenchRow &row);

// -o: md (llama-bench's table), csv, json (one array), jsonl (one object a
// line). Rows are printed one by one as they are measured:
// header, then bench_row for each (first = the first row), then footer.
enum class BenchFormat { md, csv, json, jsonl };
std::optional<BenchFormat> parse_bench_format(const std::string &name);
// `bandwidth`: the rows carry BandwidthFigures (md and csv add columns).
std::string bench_header(BenchFormat format, bool bandwidth);
std::string bench_row(BenchFormat format, const BenchRow &row, bool first);
std::string bench_footer(BenchFormat format);

} // namespace bonsai::cli
