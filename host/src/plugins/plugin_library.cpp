#include "plugins/plugin_library.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

#include "bonsai/engine.hpp"

namespace bonsai::host {
namespace {

// The first function pointer: everything before it (size, ABI, strings) is
// the part every 1.x table has.
constexpr size_t kTableHeaderBytes = offsetof(bonsai_backend_api, probe);

// True when `file` starts with the ELF magic; lets "not a shared library" be
// reported as such instead of dlopen's terse text.
bool looks_like_elf(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 4 && std::memcmp(magic,
                                         "\x7f"
                                         "ELF",
                                         4) == 0;
}

std::string copy_c_string(const char *text, size_t max_length) {
  if (text == nullptr)
    return {};
  return std::string(text, strnlen(text, max_length));
}

} // namespace

std::string status_name(bonsai_status status) {
  switch (status) {
  case BONSAI_OK:
    return "ok";
  case BONSAI_ERR_INVALID_ARGUMENT:
    return "invalid argument";
  case BONSAI_ERR_UNSUPPORTED:
    return "unsupported";
  case BONSAI_ERR_NO_DEVICE:
    return "no device";
  case BONSAI_ERR_OUT_OF_MEMORY:
    return "out of memory";
  case BONSAI_ERR_BAD_STATE:
    return "bad state";
  case BONSAI_ERR_INTERNAL:
    return "internal error";
  }
  return fmt::format("unknown status {}", static_cast<int>(status));
}

std::string backend_name_from_file(const std::filesystem::path &file) {
  std::string stem = file.filename().string();
  constexpr std::string_view prefix = "libbonsai_";
  constexpr std::string_view suffix = ".so";
  if (stem.size() > prefix.size() + suffix.size() && stem.starts_with(prefix) &&
      stem.ends_with(suffix))
    return stem.substr(prefix.size(), stem.size() - prefix.size() - suffix.size());
  return file.stem().string();
}

PluginLibrary::~PluginLibrary() = default;

void PluginLibrary::fail(const std::string &what) const {
  throw PluginError(fmt::format("plugin {}: {}", path_.string(), what));
}

std::shared_ptr<const PluginLibrary> PluginLibrary::load(const std::filesystem::path &file) {
  std::shared_ptr<PluginLibrary> plugin(new PluginLibrary());
  plugin->path_ = file;
  plugin->name_ = backend_name_from_file(file);

  std::error_code exists_error;
  if (!std::filesystem::is_regular_file(file, exists_error))
    plugin->fail("no such file");
  if (!looks_like_elf(file))
    plugin->fail("not a shared library (no ELF header)");

  // RTLD_NOW: unresolved symbols surface here, not in the middle of a step.
  // RTLD_LOCAL: two plugins never see each other's symbols.
  boost::dll::fs::error_code load_error;
  plugin->library_.load(file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local,
                        load_error);
  if (load_error || !plugin->library_.is_loaded()) {
    const char *detail = dlerror(); // Boost.DLL leaves dlopen's text in place
    plugin->fail(
        fmt::format("cannot be loaded: {}", detail != nullptr ? detail : load_error.message()));
  }
  if (!plugin->library_.has(BONSAI_BACKEND_ENTRY_SYMBOL))
    plugin->fail(fmt::format("not a bonsai backend: it does not export the entry symbol '{}'",
                             BONSAI_BACKEND_ENTRY_SYMBOL));

  auto entry = plugin->library_.get<const bonsai_backend_api *(uint32_t, uint32_t)>(
      BONSAI_BACKEND_ENTRY_SYMBOL);
  const bonsai_backend_api *table = entry(BONSAI_ABI_MAJOR, BONSAI_ABI_MINOR);
  if (table == nullptr)
    plugin->fail(fmt::format("{}({}, {}) returned NULL: the plugin cannot serve this host",
                             BONSAI_BACKEND_ENTRY_SYMBOL, BONSAI_ABI_MAJOR, BONSAI_ABI_MINOR));

  // struct_size and abi_major sit at fixed offsets in every version; read
  // them before trusting anything else.
  const uint32_t struct_size = table->struct_size;
  if (struct_size < offsetof(bonsai_backend_api, abi_minor) + sizeof(uint32_t))
    plugin->fail(fmt::format("API table too small ({} bytes)", struct_size));
  if (table->abi_major != BONSAI_ABI_MAJOR)
    plugin->fail(fmt::format("built for ABI {}.x, but this host speaks {}.x", table->abi_major,
                             BONSAI_ABI_MAJOR));
  if (struct_size < kTableHeaderBytes)
    plugin->fail(fmt::format("API table too small ({} bytes, the ABI {}.0 header alone is {})",
                             struct_size, BONSAI_ABI_MAJOR, kTableHeaderBytes));

  // A newer minor may have a larger table (extra functions we ignore); an
  // older or trimmed one a smaller one (missing functions read as NULL).
  std::memcpy(&plugin->api_, table, std::min<size_t>(struct_size, sizeof(bonsai_backend_api)));
  plugin->api_.struct_size = std::min<uint32_t>(struct_size, sizeof(bonsai_backend_api));

  if (plugin->api_.name != nullptr && plugin->api_.name[0] != '\0')
    plugin->name_ = copy_c_string(plugin->api_.name, 64);
  plugin->version_ = copy_c_string(plugin->api_.version, 64);
  plugin->description_ = copy_c_string(plugin->api_.description, 256);

  const auto &api = plugin->api_;
  const std::pair<const void *, const char *> required[] = {
      {reinterpret_cast<const void *>(api.probe), "probe"},
      {reinterpret_cast<const void *>(api.create_context), "create_context"},
      {reinterpret_cast<const void *>(api.destroy_context), "destroy_context"},
      {reinterpret_cast<const void *>(api.last_error), "last_error"},
      {reinterpret_cast<const void *>(api.upload_weight), "upload_weight"},
      {reinterpret_cast<const void *>(api.matmul), "matmul"},
  };
  for (const auto &[function, function_name] : required)
    if (function == nullptr)
      plugin->fail(fmt::format("API table lacks the required function '{}'", function_name));
  return plugin;
}

ProbeResult PluginLibrary::probe() const {
  ProbeResult result;
  result.device.struct_size = sizeof result.device;
  result.status = api_.probe(&result.device);
  // The plugin fills fixed-size arrays; never trust the terminator.
  result.device.name[sizeof result.device.name - 1] = '\0';
  result.device.detail[sizeof result.device.detail - 1] = '\0';
  return result;
}

} // namespace bonsai::host
