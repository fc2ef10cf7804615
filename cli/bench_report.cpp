#include "bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace bonsai::cli {
namespace {

std::string printf_string(const char *format, auto... values) {
  const int length = std::snprintf(nullptr, 0, format, values...);
  std::string text(static_cast<size_t>(std::max(length, 0)) + 1, '\0');
  std::snprintf(text.data(), text.size(), format, values...);
  text.pop_back(); // the NUL
  return text;
}

std::string human_size(uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  return mib >= 1024.0 ? printf_string("%.2f GiB", mib / 1024.0) : printf_string("%.2f MiB", mib);
}

std::string human_params(uint64_t n) {
  const double v = static_cast<double>(n);
  if (v >= 1e9)
    return printf_string("%.2f B", v / 1e9);
  if (v >= 1e6)
    return printf_string("%.2f M", v / 1e6);
  return printf_string("%.2f K", v / 1e3);
}

std::string json_escape(const std::string &s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += printf_string("\\u%04x", c);
      continue;
    }
    out += c;
  }
  return out;
}

} // namespace

BenchStats summarize(const BenchRow &row) {
  std::vector<double> tps;
  for (const double s : row.seconds)
    tps.push_back(row.n_tokens / s);
  BenchStats stats;
  if (tps.empty())
    return stats;
  const double n = static_cast<double>(tps.size());
  stats.mean_tps = std::accumulate(tps.begin(), tps.end(), 0.0) / n;
  double squares = 0;
  for (const double t : tps)
    squares += (t - stats.mean_tps) * (t - stats.mean_tps);
  stats.stddev_tps = tps.size() > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
  std::sort(tps.begin(), tps.end());
  const size_t mid = tps.size() / 2;
  stats.median_tps = tps.size() % 2 ? tps[mid] : (tps[mid - 1] + tps[mid]) / 2;
  if (row.bandwidth && row.bandwidth->bytes_per_token > 0) {
    stats.limit_tps = row.bandwidth->read_bytes_per_s / row.bandwidth->bytes_per_token;
    stats.share_of_limit = stats.median_tps / stats.limit_tps;
  }
  return stats;
}

namespace {

// The --membw columns of a row: read GB/s, then for tg rows the limit and
// the share of it (pp rows are bound by compute: "-").
std::string markdown_bandwidth(const BenchRow &row, const BenchStats &s) {
  if (!row.bandwidth)
    return "";
  const std::string gbs = printf_string(" %.1f |", row.bandwidth->read_bytes_per_s / 1e9);
  if (s.limit_tps <= 0)
    return gbs + " - | - |";
  return gbs + printf_string(" %.2f | %.1f %% |", s.limit_tps, 100.0 * s.share_of_limit);
}

std::string markdown_row(const BenchRow &row) {
  const BenchStats s = summarize(row);
  const std::string threads = row.threads > 0 ? std::to_string(row.threads) : "auto";
  return printf_string("| %s | %s | %s | %s | %s | %s | %.2f ± %.2f | %.2f |", row.model.c_str(),
                       human_size(row.size_bytes).c_str(), human_params(row.n_params).c_str(),
                       row.backend.c_str(), threads.c_str(), row.test.c_str(), s.mean_tps,
                       s.stddev_tps, s.median_tps) +
         markdown_bandwidth(row, s) + "\n";
}

// CSV fields are quoted when they hold a comma, a quote or a line break.
std::string csv_field(const std::string &s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos)
    return s;
  std::string out = "\"";
  for (const char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_row(const BenchRow &row) {
  const BenchStats s = summarize(row);
  std::string samples;
  for (size_t k = 0; k < row.seconds.size(); ++k)
    samples += printf_string(k ? ";%.6f" : "%.6f", row.seconds[k]);
  if (row.bandwidth)
    samples += printf_string(",%.0f,%.0f,%.4f,%.4f", row.bandwidth->read_bytes_per_s,
                             row.bandwidth->bytes_per_token, s.limit_tps, s.share_of_limit);
  return csv_field(row.model) +
         printf_string(",%llu,%llu,", static_cast<unsigned long long>(row.size_bytes),
                       static_cast<unsigned long long>(row.n_params)) +
         csv_field(row.backend) + printf_string(",%d,", row.threads) + csv_field(row.test) +
         printf_string(",%d,%.4f,%.4f,%.4f,", row.n_tokens, s.mean_tps, s.stddev_tps,
                       s.median_tps) +
         samples + "\n";
}

std::string json_object(const BenchRow &row) {
  const BenchStats s = summarize(row);
  std::string out =
      printf_string("{\"model\": \"%s\", \"size_bytes\": %llu, \"n_params\": %llu, ",
                    json_escape(row.model).c_str(), static_cast<unsigned long long>(row.size_bytes),
                    static_cast<unsigned long long>(row.n_params));
  out += printf_string("\"backend\": \"%s\", \"threads\": %d, \"test\": \"%s\", ",
                       json_escape(row.backend).c_str(), row.threads, row.test.c_str());
  out += printf_string("\"n_tokens\": %d, \"avg_ts\": %.4f, \"stddev_ts\": %.4f, "
                       "\"median_ts\": %.4f, \"samples_s\": [",
                       row.n_tokens, s.mean_tps, s.stddev_tps, s.median_tps);
  for (size_t k = 0; k < row.seconds.size(); ++k)
    out += printf_string(k ? ", %.6f" : "%.6f", row.seconds[k]);
  out += "]";
  if (row.bandwidth)
    out += printf_string(", \"read_bytes_per_s\": %.0f, \"bytes_per_token\": %.0f, "
                         "\"limit_ts\": %.4f, \"share_of_limit\": %.4f",
                         row.bandwidth->read_bytes_per_s, row.bandwidth->bytes_per_token,
                         s.limit_tps, s.share_of_limit);
  return out + "}";
}

} // namespace

std::optional<BenchFormat> parse_bench_format(const std::string &name) {
  if (name == "md")
    return BenchFormat::md;
  if (name == "csv")
    return BenchFormat::csv;
  if (name == "json")
    return BenchFormat::json;
  if (name == "jsonl")
    return BenchFormat::jsonl;
  return std::nullopt;
}

std::string bench_header(BenchFormat format, bool bandwidth) {
  switch (format) {
  case BenchFormat::md:
    if (bandwidth)
      return "| model | size | params | backend | threads | test | t/s | median t/s | read GB/s "
             "| limit t/s | % of limit |\n"
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    return "| model | size | params | backend | threads | test | t/s | median t/s |\n"
           "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n";
  case BenchFormat::csv:
    return std::string("model,size_bytes,n_params,backend,threads,test,n_tokens,avg_ts,stddev_ts,"
                       "median_ts,samples_s") +
           (bandwidth ? ",read_bytes_per_s,bytes_per_token,limit_ts,share_of_limit\n" : "\n");
  case BenchFormat::json:
    return "[\n";
  case BenchFormat::jsonl:
    return "";
  }
  return "";
}

std::string bench_row(BenchFormat format, const BenchRow &row, bool first) {
  switch (format) {
  case BenchFormat::md:
    return markdown_row(row);
  case BenchFormat::csv:
    return csv_row(row);
  case BenchFormat::json:
    return std::string(first ? "  " : ",\n  ") + json_object(row);
  case BenchFormat::jsonl:
    return json_object(row) + "\n";
  }
  return "";
}

std::string bench_footer(BenchFormat format) {
  return format == BenchFormat::json ? "\n]\n" : "";
}

} // namespace bonsai::cli
