#include "tune_cache.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fnv_hash.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

constexpr std::string_view kMagic = "bonsai cuda tune 1";

// A field of one line: tabs and newlines would break the format.
std::string one_line(std::string text) {
  for (char &c : text)
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
  return text;
}

// The rest of `line` after "`name` ", or nullopt when it does not start so.
std::optional<std::string> field(const std::string &line, std::string_view name) {
  if (line.size() <= name.size() || line.compare(0, name.size(), name) != 0 ||
      line[name.size()] != ' ')
    return std::nullopt;
  return line.substr(name.size() + 1);
}

// A whole decimal number (no sign, no spaces), or nullopt.
std::optional<long long> whole_number(const std::string &text) {
  if (text.empty() || text.size() > 12)
    return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9')
      return std::nullopt;
  return std::stoll(text);
}

std::vector<std::string> split_tabs(const std::string &text) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (size_t tab; (tab = text.find('\t', begin)) != std::string::npos; begin = tab + 1)
    parts.push_back(text.substr(begin, tab - begin));
  parts.push_back(text.substr(begin));
  return parts;
}

std::optional<CandidateTime> parse_row(const std::string &text) {
  const std::vector<std::string> parts = split_tabs(text);
  if (parts.size() != 4 || parts[0].empty() || (parts[2] != "passed" && parts[2] != "failed"))
    return std::nullopt;
  CandidateTime row;
  row.name = parts[0];
  row.passed = parts[2] == "passed";
  row.note = parts[3];
  if (parts[1] != "-") {
    char *end = nullptr;
    errno = 0;
    row.us = std::strtod(parts[1].c_str(), &end);
    if (errno != 0 || end != parts[1].c_str() + parts[1].size() || !(row.us >= 0))
      return std::nullopt;
  }
  return row;
}

std::string format_us(double us) {
  return us < 0 ? "-" : strformat("%.3f", us);
}

} // namespace

std::string TuneKey::file_name() const {
  uint64_t hash = kFnvOffsetBasis;
  for (const std::string &part : {device, model, options, std::to_string(width)}) {
    const uint64_t length = part.size();
    hash = fnv1a64(std::string_view(reinterpret_cast<const char *>(&length), sizeof length), hash);
    hash = fnv1a64(part, hash);
  }
  return strformat("%016llx.tune", static_cast<unsigned long long>(hash));
}

std::string encode_tune_record(const TuneRecord &r) {
  std::ostringstream out;
  out << kMagic << '\n';
  out << "device " << one_line(r.key.device) << '\n';
  out << "model " << one_line(r.key.model) << '\n';
  out << "options " << one_line(r.key.options) << '\n';
  out << "width " << r.key.width << '\n';
  out << "driver " << r.stamp.driver_version << '\n';
  out << "build " << one_line(r.stamp.build) << '\n';
  out << "choice " << one_line(r.choice) << '\n';
  for (const CandidateTime &row : r.table)
    out << "candidate " << one_line(row.name) << '\t' << format_us(row.us) << '\t'
        << (row.passed ? "passed" : "failed") << '\t' << one_line(row.note) << '\n';
  return out.str();
}

std::optional<TuneRecord> decode_tune_record(std::string_view text, std::string *why) {
  std::vector<std::string> lines;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  if (text.empty() || text.back() != '\n') {
    *why = "it does not end with a whole line (truncated?)";
    return std::nullopt;
  }
  if (lines.empty() || lines[0] != kMagic) {
    *why = "its first line is not '" + std::string(kMagic) + "'";
    return std::nullopt;
  }
  const char *const names[] = {"device", "model", "options", "width", "driver", "build", "choice"};
  std::string values[7];
  for (size_t i = 0; i < 7; ++i) {
    const std::optional<std::string> value =
        i + 1 < lines.size() ? field(lines[i + 1], names[i]) : std::nullopt;
    if (!value) {
      *why = strformat("line %zu is not its '%s' line", i + 2, names[i]);
      return std::nullopt;
    }
    values[i] = *value;
  }
  TuneRecord r;
  r.key = {values[0], values[1], values[2], 0};
  const std::optional<long long> width = whole_number(values[3]);
  const std::optional<long long> driver = whole_number(values[4]);
  if (!width || *width < 1 || *width > 1024 || !driver || *driver > 1000000) {
    *why = "its width or driver is not a number";
    return std::nullopt;
  }
  r.key.width = static_cast<int>(*width);
  r.stamp = {static_cast<int>(*driver), values[5]};
  r.choice = values[6];
  bool chosen_passed = false;
  for (size_t i = 8; i < lines.size(); ++i) {
    const std::optional<std::string> rest = field(lines[i], "candidate");
    const std::optional<CandidateTime> row = rest ? parse_row(*rest) : std::nullopt;
    if (!row) {
      *why = strformat("line %zu is not a candidate's row", i + 1);
      return std::nullopt;
    }
    chosen_passed = chosen_passed || (row->name == r.choice && row->passed && row->us >= 0);
    r.table.push_back(*row);
  }
  if (!chosen_passed) {
    *why = "its choice '" + r.choice + "' is not a timed candidate that passed its check";
    return std::nullopt;
  }
  return r;
}

TuneFound TuneCache::load(const TuneKey &key, const TuneStamp &stamp) const {
  TuneFound found;
  std::ifstream in(entry_path(key), std::ios::binary);
  if (!in)
    return found; // miss
  std::ostringstream content;
  content << in.rdbuf();
  std::optional<TuneRecord> record = decode_tune_record(content.str(), &found.why);
  if (!record) {
    found.lookup = TuneLookup::corrupt;
    return found;
  }
  if (!(record->key == key)) {
    found.lookup = TuneLookup::stale;
    found.why = "it is another key's (a hash collision)";
  } else if (record->stamp.driver_version != stamp.driver_version) {
    found.lookup = TuneLookup::stale;
    found.why = strformat("driver %d measured it, this is %d", record->stamp.driver_version,
                          stamp.driver_version);
  } else if (record->stamp.build != stamp.build) {
    found.lookup = TuneLookup::stale;
    found.why = "plugin build " + record->stamp.build + " measured it, this is " + stamp.build;
  } else {
    found.lookup = TuneLookup::hit;
    found.record = std::move(*record);
  }
  return found;
}

std::string TuneCache::store(const TuneRecord &record) const {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error)
    return "cannot create " + dir_.string() + ": " + error.message();
  const std::filesystem::path target = entry_path(record.key);
  const std::filesystem::path temp =
      target.string() + strformat(".tmp.%ld", static_cast<long>(getpid()));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << encode_tune_record(record);
    out.close();
    if (!out) {
      std::filesystem::remove(temp, error);
      return "cannot write " + temp.string();
    }
  }
  std::filesystem::rename(temp, target, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    return "cannot rename " + temp.string() + " into place: " + error.message();
  }
  return {};
}

std::filesystem::path tune_cache_dir(const std::filesystem::path &ptx_dir) {
  return ptx_dir.parent_path() / "cuda-tune";
}

} // namespace bonsai::cuda
