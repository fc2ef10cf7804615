#pragma once
// Shared helpers for the CUDA plugin tests: paths, an environment guard and
// a scratch folder per test.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "bonsai/bonsai_backend.h"

namespace cuda_test {

inline std::string cuda_plugin() {
  return std::string(BONSAI_PLUGIN_DIR) + "/libbonsai_cuda.so";
}
inline std::string tiny_q1() {
  return std::string(BONSAI_TEST_DATA_DIR) + "/tiny-q1.gguf";
}

// The plugin's API table through plain dlopen (as a third-party host would).
inline const bonsai_backend_api &cuda_api() {
  static void *handle = dlopen(cuda_plugin().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw std::runtime_error(dlerror());
  auto entry =
      reinterpret_cast<bonsai_backend_get_api_fn>(dlsym(handle, BONSAI_BACKEND_ENTRY_SYMBOL));
  return *entry(BONSAI_ABI_MAJOR, BONSAI_ABI_MINOR);
}

// Sets (or, with nullopt, unsets) an environment variable for a scope.
class EnvGuard {
public:
  EnvGuard(const char *name, const std::optional<std::string> &value) : name_(name) {
    if (const char *old = std::getenv(name); old != nullptr)
      old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~EnvGuard() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  EnvGuard(const EnvGuard &) = delete;
  EnvGuard &operator=(const EnvGuard &) = delete;

private:
  const char *name_;
  std::optional<std::string> old_;
};

// A fresh empty folder under the system temp dir, removed with the object.
class TempDir {
public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ =
        std::filesystem::temp_directory_path() / ("bonsai-cuda-test-" + std::to_string(getpid()) +
                                                  "-" + std::to_string(counter.fetch_add(1)));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace cuda_test
