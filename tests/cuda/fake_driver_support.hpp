#pragma once
// Shared by the tests that run the CUDA plugin on the fake driver
// (fake_driver/): the skip guard, a log sink that keeps every line, and a
// small context description.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "bonsai/log.hpp"
#include "cuda_test_support.hpp"
#include "fake_cuda_control.h"
#include "nvrtc_library.hpp"

namespace fake_driver_test {

#ifdef BONSAI_FAKE_CUDA_DRIVER
inline const char *const kFakeDriver = BONSAI_FAKE_CUDA_DRIVER;
#else
inline const char *const kFakeDriver = nullptr;
#endif

#define REQUIRE_FAKE_DRIVER_AND_NVRTC()                                                            \
  do {                                                                                             \
    if (kFakeDriver == nullptr)                                                                    \
      GTEST_SKIP() << "skipped: the fake CUDA driver is not built in this configuration";          \
    if (bonsai::cuda::load_nvrtc().api == nullptr)                                                 \
      GTEST_SKIP() << "skipped: NVRTC not available";                                              \
  } while (0)

// The host's log level at info for a scope (warnings the tests read).
class LevelGuard {
public:
  LevelGuard() : saved_(bonsai::log_level()) { bonsai::set_log_level(bonsai::LogLevel::info); }
  ~LevelGuard() { bonsai::set_log_level(saved_); }

private:
  bonsai::LogLevel saved_;
};

struct Lines {
  std::mutex mutex;
  std::vector<std::string> lines;
  static void sink(void *self, bonsai_log_level, const char *message) {
    auto *l = static_cast<Lines *>(self);
    std::lock_guard<std::mutex> lock(l->mutex);
    l->lines.emplace_back(message);
  }
  int count(const std::string &text) {
    int n = 0;
    for (const auto &line : lines)
      n += line.find(text) != std::string::npos;
    return n;
  }
};

// What the fake driver holds now (it is the copy the plugin loaded).
inline bonsai_fake_cuda_counts_t live_counts() {
  void *handle = dlopen(kFakeDriver, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw std::runtime_error(dlerror());
  auto counts_fn =
      reinterpret_cast<bonsai_fake_cuda_counts_fn>(dlsym(handle, "bonsai_fake_cuda_counts"));
  bonsai_fake_cuda_counts_t counts{};
  counts_fn(&counts);
  dlclose(handle);
  return counts;
}

// Kernels the fake driver has run so far whose name contains `part`.
inline int fake_launches(const char *part) {
  void *handle = dlopen(kFakeDriver, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw std::runtime_error(dlerror());
  auto launches_fn =
      reinterpret_cast<bonsai_fake_cuda_launches_fn>(dlsym(handle, "bonsai_fake_cuda_launches"));
  const int n = launches_fn(part);
  dlclose(handle);
  return n;
}

inline bonsai_context_desc context_desc(Lines *log, const char *options = "") {
  bonsai_context_desc desc{};
  desc.struct_size = sizeof desc;
  desc.max_context = 32;
  desc.max_batch = 4;
  desc.log = Lines::sink;
  desc.log_user_data = log;
  desc.log_level = BONSAI_LOG_TRACE;
  desc.options = options;
  return desc;
}

// Creates a CUDA context (logging into `log`) and destroys it again: what a
// start of the plugin compiles, loads and caches. A failure is a test failure.
inline void start_and_stop_context(Lines &log, const char *options = "") {
  const bonsai_context_desc desc = context_desc(&log, options);
  bonsai_context *ctx = nullptr;
  char error[512] = {};
  ASSERT_EQ(cuda_test::cuda_api().create_context(&desc, &ctx, error, sizeof error), BONSAI_OK)
      << error;
  cuda_test::cuda_api().destroy_context(ctx);
}

} // namespace fake_driver_test
