#include "ptx_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

#include "fnv_hash.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

constexpr char kMagic[8] = {'B', 'S', 'I', 'P', 'T', 'X', '0', '1'};
constexpr size_t kHeaderBytes = sizeof(kMagic) + 2 * sizeof(uint64_t);

uint64_t hash_field(uint64_t hash, std::string_view field) {
  const uint64_t length = field.size();
  hash = fnv1a64(std::string_view(reinterpret_cast<const char *>(&length), sizeof length), hash);
  return fnv1a64(field, hash);
}

bool is_off(const char *value) {
  if (value == nullptr)
    return false;
  const std::string v(value);
  return v == "off" || v == "0" || v == "no" || v == "false" || v == "OFF";
}

bool non_empty(const char *value) {
  return value != nullptr && *value != '\0';
}

// A name no other writer (thread or process) uses at the same time.
std::string temp_suffix() {
  static std::atomic<uint64_t> counter{0};
  const size_t thread = std::hash<std::thread::id>{}(std::this_thread::get_id());
  return strformat(".tmp.%ld.%zx.%llu", static_cast<long>(getpid()), thread,
                   static_cast<unsigned long long>(counter.fetch_add(1)));
}

} // namespace

std::string ptx_cache_key(const PtxKeyParts &parts) {
  uint64_t hash = kFnvOffsetBasis;
  hash = hash_field(hash, parts.source);
  hash = hash_field(hash, std::to_string(parts.options.size()));
  for (const std::string &option : parts.options)
    hash = hash_field(hash, option);
  hash = hash_field(hash, parts.arch);
  hash = hash_field(hash, parts.nvrtc_version);
  hash = hash_field(hash, std::to_string(parts.driver_version));
  return strformat("%016llx", static_cast<unsigned long long>(hash));
}

CacheLocation resolve_cache_location(const EnvLookup &env, bool disabled_by_option) {
  CacheLocation location;
  if (disabled_by_option) {
    location.reason = "disabled by the context option ptx_cache=off";
    return location;
  }
  if (const char *value = env("BONSAI_CUDA_CACHE"); is_off(value)) {
    location.reason = std::string("disabled by BONSAI_CUDA_CACHE=") + value;
    return location;
  }
  std::filesystem::path root;
  if (const char *dir = env("BONSAI_CACHE_DIR"); non_empty(dir)) {
    root = dir;
    location.reason = "$BONSAI_CACHE_DIR";
  } else if (const char *xdg = env("XDG_CACHE_HOME"); non_empty(xdg)) {
    root = std::filesystem::path(xdg) / "bonsai";
    location.reason = "$XDG_CACHE_HOME/bonsai";
  } else if (const char *home = env("HOME"); non_empty(home)) {
    root = std::filesystem::path(home) / ".cache" / "bonsai";
    location.reason = "~/.cache/bonsai";
  } else {
    location.reason = "disabled: none of BONSAI_CACHE_DIR, XDG_CACHE_HOME, HOME is set";
    return location;
  }
  location.enabled = true;
  location.dir = root / "cuda-ptx";
  return location;
}

CacheLocation resolve_cache_location(bool disabled_by_option) {
  return resolve_cache_location([](const char *name) { return std::getenv(name); },
                                disabled_by_option);
}

std::string encode_ptx_entry(std::string_view ptx) {
  const uint64_t length = ptx.size();
  const uint64_t checksum = fnv1a64(ptx);
  std::string bytes(kHeaderBytes, '\0');
  std::memcpy(bytes.data(), kMagic, sizeof kMagic);
  std::memcpy(bytes.data() + sizeof kMagic, &length, sizeof length);
  std::memcpy(bytes.data() + sizeof kMagic + sizeof length, &checksum, sizeof checksum);
  bytes.append(ptx);
  return bytes;
}

std::optional<std::string> decode_ptx_entry(std::string_view bytes, std::string *why) {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    *why = bytes.size() < kHeaderBytes ? "shorter than its header" : "bad magic";
    return std::nullopt;
  }
  uint64_t length = 0;
  uint64_t checksum = 0;
  std::memcpy(&length, bytes.data() + sizeof kMagic, sizeof length);
  std::memcpy(&checksum, bytes.data() + sizeof kMagic + sizeof length, sizeof checksum);
  const std::string_view payload = bytes.substr(kHeaderBytes);
  if (payload.size() != length) {
    *why = strformat("payload is %zu bytes, the header says %llu (truncated?)", payload.size(),
                     static_cast<unsigned long long>(length));
    return std::nullopt;
  }
  if (fnv1a64(payload) != checksum) {
    *why = "checksum mismatch";
    return std::nullopt;
  }
  return std::string(payload);
}

PtxCache::PtxCache(std::filesystem::path dir, Logger log) : dir_(std::move(dir)), log_(log) {}

std::filesystem::path PtxCache::entry_path(const std::string &key) const {
  return dir_ / (key + ".ptx");
}

std::optional<std::string> PtxCache::load(const std::string &key) const {
  const std::filesystem::path path = entry_path(key);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  std::string why;
  std::optional<std::string> ptx = decode_ptx_entry(content.str(), &why);
  if (!ptx) {
    log_.warn(strformat("PTX cache entry %s is corrupt (%s); deleted, rebuilding",
                        path.string().c_str(), why.c_str()));
    remove(key);
  }
  return ptx;
}

bool PtxCache::store(const std::string &key, std::string_view ptx) const {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) {
    warn_unwritable(
        strformat("cannot create %s: %s", dir_.string().c_str(), error.message().c_str()));
    return false;
  }
  const std::filesystem::path target = entry_path(key);
  const std::filesystem::path temp = target.string() + temp_suffix();
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    const std::string bytes = encode_ptx_entry(ptx);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(temp, error);
      warn_unwritable("cannot write " + temp.string());
      return false;
    }
  }
  // rename() replaces atomically: a concurrent writer's entry for the same key
  // holds the same PTX, so whichever lands last is as good as the other.
  std::filesystem::rename(temp, target, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    warn_unwritable(strformat("cannot rename %s into place: %s", temp.string().c_str(),
                              error.message().c_str()));
    return false;
  }
  return true;
}

void PtxCache::remove(const std::string &key) const {
  std::error_code ignored;
  std::filesystem::remove(entry_path(key), ignored);
}

int PtxCache::remove_stale_temps(std::chrono::seconds age) const {
  std::error_code error;
  const auto cutoff = std::filesystem::file_time_type::clock::now() - age;
  int removed = 0;
  for (std::filesystem::directory_iterator it(dir_, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.find(".ptx.tmp.") == std::string::npos)
      continue;
    std::error_code ignored;
    const auto written = std::filesystem::last_write_time(it->path(), ignored);
    if (!ignored && written < cutoff && std::filesystem::remove(it->path(), ignored))
      ++removed;
  }
  return removed;
}

void PtxCache::warn_unwritable(const std::string &what) const {
  static std::mutex mutex;
  static std::set<std::string> warned_dirs;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    first = warned_dirs.insert(dir_.string()).second;
  }
  const std::string message =
      "PTX cache not writable, kernels are compiled without caching: " + what;
  if (first)
    log_.warn(message);
  else
    log_.debug(message);
}

} // namespace bonsai::cuda
