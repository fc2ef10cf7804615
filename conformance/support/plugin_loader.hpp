#pragma once
// Loads a backend plugin with dlopen and owns contexts created through its
// API table. Test-only helpers: failures throw std::runtime_error with the
// plugin path and the plugin's own message.
#include <cctype>
#include <cstdlib>
#include <dlfcn.h>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bonsai/bonsai_backend.h"

namespace bonsai::test {

// The plugin under test: $BONSAI_PLUGIN, else the CPU plugin of this build.
inline std::string plugin_path_from_env() {
  if (const char *env = std::getenv("BONSAI_PLUGIN"); env != nullptr && *env != '\0')
    return env;
#ifdef BONSAI_PLUGIN_DIR
  return BONSAI_PLUGIN_DIR "/libbonsai_cpu.so";
#else
  throw std::runtime_error("set BONSAI_PLUGIN to the plugin file to test");
#endif
}

// Context option strings to run a suite with: $BONSAI_PLUGIN_OPTIONS alone
// when set; for another plugin ($BONSAI_PLUGIN) its exact and default
// kernels; for this build's CPU plugin every kernel set by name, so the AVX2
// set is checked on AVX-512 machines too (a set this CPU lacks, or one built
// for the other architecture, is skipped: see unsupported_option_reason).
inline std::vector<std::string> plugin_option_sets_from_env() {
  if (const char *env = std::getenv("BONSAI_PLUGIN_OPTIONS"); env != nullptr)
    return {env};
  if (const char *env = std::getenv("BONSAI_PLUGIN"); env != nullptr && *env != '\0')
    return {"kernels=reference", ""};
  return {"kernels=reference", "kernels=avx2",    "kernels=avxvnni", "kernels=avx512",
          "kernels=neon",      "kernels=dotprod", "kernels=i8mm"};
}

// A short test-name-safe label for an option string.
inline std::string option_set_label(const std::string &options) {
  if (options.empty())
    return "default";
  std::string label;
  for (char c : options)
    label += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (label.rfind("kernels_", 0) == 0)
    label = label.substr(8);
  return label;
}

// The library stays loaded for the life of the process: a plugin may keep
// worker threads parked inside its libraries, so unloading is never safe.
class PluginLibrary {
public:
  explicit PluginLibrary(std::string path) : path_(std::move(path)) {
    handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr)
      throw std::runtime_error("cannot load plugin " + path_ + ": " + dlerror());
    entry_ =
        reinterpret_cast<bonsai_backend_get_api_fn>(dlsym(handle_, BONSAI_BACKEND_ENTRY_SYMBOL));
    if (entry_ == nullptr)
      throw std::runtime_error(path_ + " does not export " BONSAI_BACKEND_ENTRY_SYMBOL);
    api_ = entry_(BONSAI_ABI_MAJOR, BONSAI_ABI_MINOR);
    if (api_ == nullptr)
      throw std::runtime_error(path_ + ": " BONSAI_BACKEND_ENTRY_SYMBOL " returned NULL");
    if (api_->abi_major != BONSAI_ABI_MAJOR)
      throw std::runtime_error(path_ + ": plugin ABI major " + std::to_string(api_->abi_major) +
                               " differs from the host's " + std::to_string(BONSAI_ABI_MAJOR));
  }
  PluginLibrary(const PluginLibrary &) = delete;
  PluginLibrary &operator=(const PluginLibrary &) = delete;

  const std::string &path() const { return path_; }
  const bonsai_backend_api &api() const { return *api_; }
  bonsai_backend_get_api_fn entry() const { return entry_; }

private:
  std::string path_;
  void *handle_ = nullptr;
  bonsai_backend_get_api_fn entry_ = nullptr;
  const bonsai_backend_api *api_ = nullptr;
};

struct ContextConfig {
  int max_context = 64;
  int max_batch = 16;
  int n_threads = 2;
  std::string options;
  bonsai_log_fn log = nullptr;
  void *log_user_data = nullptr;
  bonsai_log_level log_level = BONSAI_LOG_WARN;
};

inline bonsai_context_desc context_desc(const ContextConfig &config) {
  bonsai_context_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.device_index = 0;
  desc.max_context = config.max_context;
  desc.max_batch = config.max_batch;
  desc.n_threads = config.n_threads;
  desc.log = config.log;
  desc.log_user_data = config.log_user_data;
  desc.log_level = config.log_level;
  desc.options = config.options.c_str();
  return desc;
}

// One context, destroyed with the object.
// Non-empty when the plugin refuses a context with these options as
// UNSUPPORTED (e.g. kernels=avx512 on a CPU without AVX-512): the reason to
// skip a test with, carrying the plugin's message.
inline std::string unsupported_option_reason(const bonsai_backend_api &api,
                                             const std::string &options) {
  ContextConfig config;
  config.options = options;
  const bonsai_context_desc desc = context_desc(config);
  bonsai_context *ctx = nullptr;
  char error[512] = {};
  const bonsai_status status = api.create_context(&desc, &ctx, error, sizeof(error));
  if (ctx != nullptr)
    api.destroy_context(ctx);
  if (status != BONSAI_ERR_UNSUPPORTED)
    return {};
  return "skipped: options '" + options + "' unsupported here: " + error;
}

class ContextHandle {
public:
  ContextHandle(const bonsai_backend_api &api, const ContextConfig &config) : api_(&api) {
    const bonsai_context_desc desc = context_desc(config);
    char error[512] = {};
    const bonsai_status status = api.create_context(&desc, &ctx_, error, sizeof(error));
    if (status != BONSAI_OK || ctx_ == nullptr)
      throw std::runtime_error("create_context failed (status " + std::to_string(status) +
                               "): " + error);
  }
  ~ContextHandle() {
    if (ctx_ != nullptr)
      api_->destroy_context(ctx_);
  }
  ContextHandle(const ContextHandle &) = delete;
  ContextHandle &operator=(const ContextHandle &) = delete;

  bonsai_context *get() const { return ctx_; }
  std::string last_error() const { return api_->last_error(ctx_); }

private:
  const bonsai_backend_api *api_;
  bonsai_context *ctx_ = nullptr;
};

} // namespace bonsai::test
