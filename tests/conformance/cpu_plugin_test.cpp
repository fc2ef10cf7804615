// Behaviour specific to the CPU plugin (not part of the ABI contract): its
// options (kernels=, kv=), the BONSAI_CPU_KERNELS override and the log lines.
// Skipped when $BONSAI_PLUGIN points at another plugin.
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif
#include <string>
#include <vector>

#include "plugin_loader.hpp"
#include "random_model.hpp"

namespace bonsai::test {
namespace {

struct LogCapture {
  std::mutex mutex;
  std::vector<std::pair<bonsai_log_level, std::string>> lines;

  static void sink(void *user, bonsai_log_level level, const char *message) {
    auto *self = static_cast<LogCapture *>(user);
    std::lock_guard<std::mutex> lock(self->mutex);
    self->lines.emplace_back(level, message);
  }
  bool contains(bonsai_log_level level, const std::string &text) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto &[l, m] : lines)
      if (l == level && m.find(text) != std::string::npos)
        return true;
    return false;
  }
};

// A context configuration with `options` that logs at DEBUG into `log`.
ContextConfig debug_logged(const std::string &options, LogCapture &log) {
  ContextConfig config;
  config.options = options;
  config.log = &LogCapture::sink;
  config.log_user_data = &log;
  config.log_level = BONSAI_LOG_DEBUG;
  return config;
}

class CpuPlugin : public ::testing::Test {
protected:
  void SetUp() override {
    if (std::getenv("BONSAI_PLUGIN") != nullptr)
      GTEST_SKIP() << "BONSAI_PLUGIN is set: these tests are for the CPU plugin only";
    library_ = std::make_unique<PluginLibrary>(plugin_path_from_env());
    unsetenv("BONSAI_CPU_KERNELS");
  }
  void TearDown() override { unsetenv("BONSAI_CPU_KERNELS"); }

  // Creates a context with the options, logging at DEBUG into `log`.
  bonsai_status create(const std::string &options, LogCapture &log, std::string *error = nullptr) {
    const ContextConfig config = debug_logged(options, log); // desc points into it
    const bonsai_context_desc desc = context_desc(config);
    bonsai_context *ctx = nullptr;
    char text[512] = {};
    const bonsai_status status = library_->api().create_context(&desc, &ctx, text, sizeof(text));
    if (error != nullptr)
      *error = text;
    if (ctx != nullptr)
      library_->api().destroy_context(ctx);
    return status;
  }

  std::unique_ptr<PluginLibrary> library_;
};

// This CPU's features, read here independently of the plugin: CPUID on
// x86-64, the kernel's HWCAP bits on AArch64.
bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

// The set `auto` must pick here (kernels/select.cpp's order).
std::string expected_default_set() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool avxvnni =
      avx2 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
  return cpu_has_avx512_vnni() ? "avx512" : avxvnni ? "avxvnni" : avx2 ? "avx2" : "reference";
#elif defined(__aarch64__)
  const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  const bool asimd = hwcap & (1ul << 1), dotprod = asimd && (hwcap & (1ul << 20)),
             i8mm = dotprod && (hwcap2 & (1ul << 13));
  return i8mm ? "i8mm" : dotprod ? "dotprod" : asimd ? "neon" : "reference";
#else
  return "reference";
#endif
}

TEST_F(CpuPlugin, NamesItselfCpu) {
  EXPECT_STREQ(library_->api().name, "cpu");
}

TEST_F(CpuPlugin, ReferenceOptionSelectsReferenceKernelsInTheDebugLog) {
  LogCapture log;
  ASSERT_EQ(create("kernels=reference", log), BONSAI_OK);
  EXPECT_TRUE(log.contains(BONSAI_LOG_DEBUG, "kernel set 'reference'"));
}

TEST_F(CpuPlugin, DefaultPicksTheBestSimdSetForThisCpu) {
  LogCapture log;
  ASSERT_EQ(create("", log), BONSAI_OK);
  const std::string expected = "kernel set '" + expected_default_set() + "'";
  EXPECT_TRUE(log.contains(BONSAI_LOG_DEBUG, expected)) << "expected a line with " << expected;
}

// Every set of the other architecture is refused as such, naming what this
// build has; every set of this one is named in the log or refused for the
// features it needs.
TEST_F(CpuPlugin, KernelSetsOfTheOtherArchitectureAreRefusedByName) {
#if defined(__aarch64__)
  const std::vector<std::string> foreign = {"avx2", "avxvnni", "avx512"};
  const std::vector<std::string> own = {"neon", "dotprod", "i8mm"};
  const std::string foreign_arch = "x86-64", own_arch = "aarch64";
#elif defined(__x86_64__)
  const std::vector<std::string> foreign = {"neon", "dotprod", "i8mm"};
  const std::vector<std::string> own = {"avx2", "avxvnni", "avx512"};
  const std::string foreign_arch = "AArch64", own_arch = "x86-64";
#else
  GTEST_SKIP() << "neither x86-64 nor AArch64";
  const std::vector<std::string> foreign, own;
  const std::string foreign_arch, own_arch;
#endif
  for (const std::string &name : foreign) {
    LogCapture log;
    std::string error;
    EXPECT_EQ(create("kernels=" + name, log, &error), BONSAI_ERR_UNSUPPORTED) << name;
    EXPECT_NE(error.find("kernels=" + name + " is an " + foreign_arch + " kernel set"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("built for " + own_arch), std::string::npos) << error;
  }
  for (const std::string &name : own) {
    LogCapture log;
    std::string error;
    const bonsai_status status = create("kernels=" + name, log, &error);
    if (status == BONSAI_OK)
      EXPECT_TRUE(log.contains(BONSAI_LOG_DEBUG, "kernel set '" + name + "'")) << name;
    else
      EXPECT_NE(error.find("requested but this CPU lacks"), std::string::npos) << error;
  }
}

TEST_F(CpuPlugin, EnvironmentForcesReferenceWhenOptionsNameNoSet) {
  setenv("BONSAI_CPU_KERNELS", "reference", 1);
  LogCapture log;
  ASSERT_EQ(create("", log), BONSAI_OK);
  EXPECT_TRUE(log.contains(BONSAI_LOG_DEBUG, "kernel set 'reference'"));
  EXPECT_TRUE(log.contains(BONSAI_LOG_DEBUG, "from BONSAI_CPU_KERNELS"));
}

TEST_F(CpuPlugin, BadEnvironmentValueIsRejectedClearly) {
  setenv("BONSAI_CPU_KERNELS", "turbo", 1);
  LogCapture log;
  std::string error;
  EXPECT_EQ(create("", log, &error), BONSAI_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("BONSAI_CPU_KERNELS"), std::string::npos) << error;
  EXPECT_NE(error.find("turbo"), std::string::npos) << error;
}

TEST_F(CpuPlugin, UnknownKernelSetIsInvalidArgumentNamingTheValue) {
  LogCapture log;
  std::string error;
  EXPECT_EQ(create("kernels=bogus", log, &error), BONSAI_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("bogus"), std::string::npos) << error;
}

TEST_F(CpuPlugin, UnknownOptionKeysAreIgnoredWithAWarning) {
  LogCapture log;
  ASSERT_EQ(create(" colour = blue ; kernels=reference;;", log), BONSAI_OK);
  EXPECT_TRUE(log.contains(BONSAI_LOG_WARN, "unknown option 'colour'"));
  EXPECT_TRUE(log.contains(BONSAI_LOG_DEBUG, "kernel set 'reference'"));
}

TEST_F(CpuPlugin, Avx512IsRefusedWhereTheCpuLacksIt) {
  if (cpu_has_avx512_vnni())
    GTEST_SKIP() << "this CPU has AVX-512 VNNI";
  LogCapture log;
  std::string error;
  EXPECT_EQ(create("kernels=avx512", log, &error), BONSAI_ERR_UNSUPPORTED);
  EXPECT_NE(error.find("AVX-512"), std::string::npos) << error;
}

TEST_F(CpuPlugin, SilentAboveTheRequestedLevel) {
  LogCapture log;
  ContextConfig config;
  config.options = "colour=blue";
  config.log = &LogCapture::sink;
  config.log_user_data = &log;
  config.log_level = BONSAI_LOG_ERROR;
  const bonsai_context_desc desc = context_desc(config);
  bonsai_context *ctx = nullptr;
  ASSERT_EQ(library_->api().create_context(&desc, &ctx, nullptr, 0), BONSAI_OK);
  library_->api().destroy_context(ctx);
  EXPECT_TRUE(log.lines.empty());
}

TEST_F(CpuPlugin, UnknownKvCacheTypeIsInvalidArgumentNamingTheValue) {
  LogCapture log;
  std::string error;
  EXPECT_EQ(create("kv=f8", log, &error), BONSAI_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("f8"), std::string::npos) << error;
  EXPECT_NE(error.find("kv"), std::string::npos) << error;
}

// Binds a small random Q1_0 model with `head_dim` in a context made with
// `options`; returns bind_model's status and its last_error in `error`.
bonsai_status bind_with(const bonsai_backend_api &api, const std::string &options, int head_dim,
                        LogCapture &log, std::string &error) {
  const ContextConfig config = debug_logged(options, log); // desc points into it
  const bonsai_context_desc desc = context_desc(config);
  bonsai_context *ctx = nullptr;
  if (api.create_context(&desc, &ctx, nullptr, 0) != BONSAI_OK)
    return BONSAI_ERR_INTERNAL;
  conformance::ModelShape shape;
  shape.head_dim = head_dim;
  shape.n_head = 384 / head_dim; // wo's rows of n_head * head_dim: whole Q1_0 blocks
  shape.n_head_kv = shape.n_head / 2;
  conformance::Rng rng(7);
  const conformance::HostModel model = conformance::random_model(shape, 41, rng);
  bonsai_status status;
  {
    conformance::UploadedModel uploaded(api, ctx, model);
    status = uploaded.bind();
    error = api.last_error(ctx);
  }
  api.destroy_context(ctx);
  return status;
}

TEST_F(CpuPlugin, KvCacheIsF32UnlessF16IsAskedFor) {
  for (const char *kernels : {"kernels=reference", "kernels=avx2", "kernels=avx512", "kernels=neon",
                              "kernels=dotprod", "kernels=i8mm"}) {
    if (!unsupported_option_reason(library_->api(), kernels).empty())
      continue; // a set this CPU lacks
    LogCapture plain, half;
    std::string error;
    ASSERT_EQ(bind_with(library_->api(), kernels, 64, plain, error), BONSAI_OK) << error;
    EXPECT_TRUE(plain.contains(BONSAI_LOG_DEBUG, "KV cache f32")) << kernels;
    ASSERT_EQ(bind_with(library_->api(), std::string(kernels) + ";kv=f16", 64, half, error),
              BONSAI_OK)
        << error;
    EXPECT_TRUE(half.contains(BONSAI_LOG_DEBUG, "KV cache f16")) << kernels;
  }
}

TEST_F(CpuPlugin, F16KvCacheTheFastKernelsCannotReadIsRefusedAtBind) {
  // head_dim 24: the fast sets' whole-head kernels need a multiple of 16.
  for (const char *kernels : {"kernels=avx2", "kernels=avx512", "kernels=neon"}) {
    if (!unsupported_option_reason(library_->api(), kernels).empty())
      continue;
    LogCapture log;
    std::string error;
    EXPECT_EQ(bind_with(library_->api(), std::string(kernels) + ";kv=f16", 24, log, error),
              BONSAI_ERR_UNSUPPORTED)
        << kernels;
    EXPECT_NE(error.find("head_dim"), std::string::npos) << error;
    EXPECT_NE(error.find("kv=f32"), std::string::npos) << error;
    EXPECT_EQ(bind_with(library_->api(), kernels, 24, log, error), BONSAI_OK) << error;
  }
  LogCapture log;
  std::string error; // the exact set reads f16 at any head_dim
  EXPECT_EQ(bind_with(library_->api(), "kernels=reference;kv=f16", 24, log, error), BONSAI_OK)
      << error;
}

} // namespace
} // namespace bonsai::test
