#pragma once
// The on-disk PTX cache (plugins/cuda/README.md, "PTX disk cache"). Needs no GPU: entries are
// plain files `<dir>/<key>.ptx` holding a small header (magic, payload length,
// FNV-1a checksum) and the PTX text, so a corrupt or truncated entry is
// recognised and deleted before the driver ever sees it. Writes go to a
// temporary file that is renamed into place, so readers see either nothing or
// a whole entry, and concurrent writers of the same key leave one valid file.
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "logger.hpp"

namespace bonsai::cuda {

// What goes into a key: everything that changes the PTX.
struct PtxKeyParts {
  std::string_view source;
  std::vector<std::string> options;
  std::string arch;          // e.g. "compute_90"
  std::string nvrtc_version; // e.g. "13.0"
  int driver_version = 0;    // cuDriverGetVersion, e.g. 13000: a new driver may JIT differently
};

// 16 lowercase hex digits of FNV-1a 64 over the parts (length-prefixed so
// that moving text between parts changes the key).
std::string ptx_cache_key(const PtxKeyParts &parts);

// Where the cache lives, or why it is off.
struct CacheLocation {
  bool enabled = false;
  std::filesystem::path dir; // the folder holding the entries
  std::string reason;        // where `dir` came from, or why the cache is off
};

// getenv-like lookup (injectable for tests).
using EnvLookup = std::function<const char *(const char *name)>;

// BONSAI_CUDA_CACHE=off|0|no|false disables; `disabled_by_option` (context
// option ptx_cache=off) too. Otherwise the root is $BONSAI_CACHE_DIR, else
// $XDG_CACHE_HOME/bonsai, else $HOME/.cache/bonsai; entries go into its
// "cuda-ptx" sub-folder.
CacheLocation resolve_cache_location(const EnvLookup &env, bool disabled_by_option);
CacheLocation resolve_cache_location(bool disabled_by_option);

class PtxCache {
public:
  PtxCache(std::filesystem::path dir, Logger log);

  const std::filesystem::path &dir() const { return dir_; }
  std::filesystem::path entry_path(const std::string &key) const;

  // The cached PTX, or nullopt on a miss. An entry that is unreadable,
  // truncated or fails its checksum is deleted (with a warning) and reported
  // as a miss.
  std::optional<std::string> load(const std::string &key) const;

  // Writes the entry atomically. Returns false when the folder is not
  // writable; the first such failure per folder and process is logged as a
  // warning, later ones at debug level.
  bool store(const std::string &key, std::string_view ptx) const;

  // Deletes an entry (e.g. one the driver refused); a missing entry is fine.
  void remove(const std::string &key) const;

  // Deletes the temporary files of writes that never finished (a process
  // killed between write and rename) once they are older than `age`: a
  // live write takes milliseconds. Returns how many went.
  int remove_stale_temps(std::chrono::seconds age) const;

private:
  void warn_unwritable(const std::string &what) const;

  std::filesystem::path dir_;
  Logger log_;
};

// Encodes/decodes the entry format (exposed for tests that craft entries).
std::string encode_ptx_entry(std::string_view ptx);
// The payload, or nullopt with *why set when the bytes are not a valid entry.
std::optional<std::string> decode_ptx_entry(std::string_view bytes, std::string *why);

} // namespace bonsai::cuda
