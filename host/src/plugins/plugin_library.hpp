#pragma once
// One loaded plugin file: the shared library, its validated API table and the
// facts the host reports about it. Shared (shared_ptr) by the engine and by
// every context made from it, so the code stays mapped while any table
// pointer is in use.
#include <boost/dll/shared_library.hpp>

#include <filesystem>
#include <memory>
#include <string>

#include "bonsai/bonsai_backend.h"

namespace bonsai::host {

// What probe() answered: the plugin's struct as it filled it (fields past
// its ABI version read 0; name and detail always NUL-terminated).
struct ProbeResult {
  bonsai_status status = BONSAI_ERR_INTERNAL;
  bonsai_device_info device{};
};

class PluginLibrary {
public:
  // Loads `file` and validates its table: entry symbol present, non-NULL
  // table, ABI major equal to the host's, table large enough for the header
  // fields and the functions the host cannot do without. Throws PluginError
  // naming the file.
  static std::shared_ptr<const PluginLibrary> load(const std::filesystem::path &file);

  PluginLibrary(const PluginLibrary &) = delete;
  PluginLibrary &operator=(const PluginLibrary &) = delete;
  ~PluginLibrary();

  // The plugin's table widened to this host's layout: functions past the
  // plugin's struct_size read as NULL.
  const bonsai_backend_api &api() const { return api_; }
  const std::filesystem::path &path() const { return path_; }
  const std::string &name() const { return name_; }
  // NUL-terminated name with a stable address (log callback user data).
  const char *name_cstr() const { return name_.c_str(); }
  const std::string &version() const { return version_; }
  const std::string &description() const { return description_; }

  // Calls the plugin's probe(); never throws for a plugin failure.
  ProbeResult probe() const;

  // Throws PluginError "<file>: <what>: <detail>".
  [[noreturn]] void fail(const std::string &what) const;

private:
  PluginLibrary() = default;
  boost::dll::shared_library library_;
  bonsai_backend_api api_{};
  std::filesystem::path path_;
  std::string name_;
  std::string version_;
  std::string description_;
};

// "ok", "no device", "invalid argument", ... for messages.
std::string status_name(bonsai_status status);

// The NAME of libbonsai_NAME.so (or the file stem for other names).
std::string backend_name_from_file(const std::filesystem::path &file);

} // namespace bonsai::host
