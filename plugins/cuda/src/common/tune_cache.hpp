#pragma once
// The tuner's choices on disk, beside the PTX cache ($BONSAI_CACHE_DIR/
// cuda-tune): one small text file per key (device, model shape and
// encoding, the options that change the paths, width), named by its hash.
// A file also names the driver version and plugin build that measured it:
// a file of another driver or build is stale and tuned again. Writes go to
// a temporary file renamed into place; a file that does not parse is
// reported as corrupt (and rewritten by the next tuning).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::cuda {

// What the choice is for. Each part is one line of text without newlines.
struct TuneKey {
  std::string device;  // name, compute capability, multiprocessors
  std::string model;   // layers, widths, heads, vocabulary, weight and KV types
  std::string options; // the context options that change what the candidates run
  int width = 0;       // tokens a step
  // The file's name: 16 hex digits of FNV-1a over the parts, ".tune".
  std::string file_name() const;
  bool operator==(const TuneKey &) const = default;
};

// What makes a measurement stale.
struct TuneStamp {
  int driver_version = 0; // cuDriverGetVersion
  std::string build;      // plugin_build_id()
  bool operator==(const TuneStamp &) const = default;
};

// One row of the tuner's table.
struct CandidateTime {
  std::string name;    // choice_options() of the candidate
  double us = -1;      // median microseconds of a step, or < 0: not timed
  bool passed = false; // its check against the reference path
  std::string note;    // why it failed or was not timed ("" when it passed)
  bool operator==(const CandidateTime &) const = default;
};

struct TuneRecord {
  TuneKey key;
  TuneStamp stamp;
  std::string choice; // the name of the candidate chosen
  std::vector<CandidateTime> table;
  bool operator==(const TuneRecord &) const = default;
};

// The file's text, and back. decode_tune_record gives nullopt and *why when
// the text is not a whole record (a line missing or malformed, a choice
// that is not a passed row of its table).
std::string encode_tune_record(const TuneRecord &record);
std::optional<TuneRecord> decode_tune_record(std::string_view text, std::string *why);

enum class TuneLookup {
  hit,     // a record for this key, driver and build
  miss,    // no file
  stale,   // a record of another driver or build, or (a hash collision) another key
  corrupt, // a file that does not parse
};

struct TuneFound {
  TuneLookup lookup = TuneLookup::miss;
  TuneRecord record; // when hit
  std::string why;   // when stale or corrupt
};

class TuneCache {
public:
  explicit TuneCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  const std::filesystem::path &dir() const { return dir_; }
  std::filesystem::path entry_path(const TuneKey &key) const { return dir_ / key.file_name(); }
  TuneFound load(const TuneKey &key, const TuneStamp &stamp) const;
  // Writes the record atomically; "" on success, else why not.
  std::string store(const TuneRecord &record) const;

private:
  std::filesystem::path dir_;
};

// The tuning cache's folder beside the PTX cache's (`ptx_dir`/../cuda-tune),
// unless $BONSAI_CUDA_TUNE_DIR names another (context.cpp).
std::filesystem::path tune_cache_dir(const std::filesystem::path &ptx_dir);

} // namespace bonsai::cuda
