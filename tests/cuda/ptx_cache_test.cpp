// The PTX disk cache and the JIT policy around it (no GPU, no NVRTC needed:
// the compiler and the driver's module loader are replaced by fakes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "cuda_test_support.hpp"
#include "kernel_jit.hpp"
#include "plugin_error.hpp"
#include "ptx_cache.hpp"

namespace {

using namespace cuda_test;
using bonsai::cuda::PtxCache;
using ::testing::HasSubstr;

// Collects log lines sent through a bonsai_log_fn.
struct LogSink {
  std::mutex mutex;
  std::vector<std::pair<bonsai_log_level, std::string>> lines;

  static void callback(void *self, bonsai_log_level level, const char *message) {
    auto *sink = static_cast<LogSink *>(self);
    std::lock_guard<std::mutex> lock(sink->mutex);
    sink->lines.emplace_back(level, message);
  }
  bonsai::cuda::Logger logger() { return bonsai::cuda::Logger(callback, this, BONSAI_LOG_TRACE); }
  int count(bonsai_log_level level, const std::string &text) {
    std::lock_guard<std::mutex> lock(mutex);
    int n = 0;
    for (const auto &[l, line] : lines)
      n += l == level && line.find(text) != std::string::npos;
    return n;
  }
};

std::string read_file(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const std::filesystem::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

const std::string kPtx = ".version 8.0\n.target sm_90\n.visible .entry bonsai_x()\n{\n ret;\n}\n";

TEST(PtxCacheKey, IsSixteenHexDigitsAndDeterministic) {
  const bonsai::cuda::PtxKeyParts parts{"source", {"-a", "-b"}, "compute_90", "13.0", 13000};
  const std::string key = bonsai::cuda::ptx_cache_key(parts);
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(bonsai::cuda::ptx_cache_key(parts), key);
}

TEST(PtxCacheKey, ChangesWithSourceOptionsArchNvrtcAndDriverVersion) {
  const bonsai::cuda::PtxKeyParts base{"source", {"-a"}, "compute_90", "13.0", 13000};
  const std::string key = bonsai::cuda::ptx_cache_key(base);
  auto with = [&](auto change) {
    bonsai::cuda::PtxKeyParts p = base;
    change(p);
    return bonsai::cuda::ptx_cache_key(p);
  };
  EXPECT_NE(with([](auto &p) { p.source = "source2"; }), key);
  EXPECT_NE(with([](auto &p) { p.options = {"-b"}; }), key);
  EXPECT_NE(with([](auto &p) { p.options = {"-a", ""}; }), key);
  EXPECT_NE(with([](auto &p) { p.arch = "compute_80"; }), key);
  EXPECT_NE(with([](auto &p) { p.nvrtc_version = "12.4"; }), key);
  EXPECT_NE(with([](auto &p) { p.driver_version = 12040; }), key);
  // Moving text from one part to the next must change the key too.
  const bonsai::cuda::PtxKeyParts split1{"ab", {"c"}, "x", "y", 0};
  const bonsai::cuda::PtxKeyParts split2{"a", {"bc"}, "x", "y", 0};
  EXPECT_NE(bonsai::cuda::ptx_cache_key(split1), bonsai::cuda::ptx_cache_key(split2));
}

TEST(PtxCacheLocation, FollowsBonsaiCacheDirThenXdgThenHome) {
  std::map<std::string, std::string> env = {
      {"BONSAI_CACHE_DIR", "/b"}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}};
  auto lookup = [&env](const char *name) -> const char * {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto location = bonsai::cuda::resolve_cache_location(lookup, false);
  EXPECT_TRUE(location.enabled);
  EXPECT_EQ(location.dir, std::filesystem::path("/b/cuda-ptx"));
  env.erase("BONSAI_CACHE_DIR");
  EXPECT_EQ(bonsai::cuda::resolve_cache_location(lookup, false).dir,
            std::filesystem::path("/x/bonsai/cuda-ptx"));
  env["XDG_CACHE_HOME"] = ""; // empty counts as unset
  EXPECT_EQ(bonsai::cuda::resolve_cache_location(lookup, false).dir,
            std::filesystem::path("/h/.cache/bonsai/cuda-ptx"));
  env.erase("HOME");
  location = bonsai::cuda::resolve_cache_location(lookup, false);
  EXPECT_FALSE(location.enabled);
  EXPECT_THAT(location.reason, HasSubstr("HOME"));
}

TEST(PtxCacheLocation, CanBeDisabledByEnvironmentOrOption) {
  std::map<std::string, std::string> env = {{"HOME", "/h"}, {"BONSAI_CUDA_CACHE", "off"}};
  auto lookup = [&env](const char *name) -> const char * {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto location = bonsai::cuda::resolve_cache_location(lookup, false);
  EXPECT_FALSE(location.enabled);
  EXPECT_THAT(location.reason, HasSubstr("BONSAI_CUDA_CACHE=off"));
  env["BONSAI_CUDA_CACHE"] = "on";
  EXPECT_TRUE(bonsai::cuda::resolve_cache_location(lookup, false).enabled);
  location = bonsai::cuda::resolve_cache_location(lookup, true);
  EXPECT_FALSE(location.enabled);
  EXPECT_THAT(location.reason, HasSubstr("ptx_cache=off"));
}

TEST(PtxCache, MissThenStoreThenHit) {
  TempDir tmp;
  LogSink sink;
  const PtxCache cache(tmp.path() / "cuda-ptx", sink.logger());
  EXPECT_EQ(cache.load("0123456789abcdef"), std::nullopt);
  ASSERT_TRUE(cache.store("0123456789abcdef", kPtx));
  EXPECT_TRUE(std::filesystem::exists(cache.entry_path("0123456789abcdef")));
  EXPECT_EQ(cache.load("0123456789abcdef"), kPtx);
  // No temporary files are left next to the entry.
  int files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(cache.dir()))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(PtxCache, CorruptEntryIsDeletedAndReportedAsMiss) {
  TempDir tmp;
  LogSink sink;
  const PtxCache cache(tmp.path(), sink.logger());
  ASSERT_TRUE(cache.store("k", kPtx));
  std::string bytes = read_file(cache.entry_path("k"));
  bytes[bytes.size() - 5] ^= 0x20; // flip one bit of the payload
  write_file(cache.entry_path("k"), bytes);
  EXPECT_EQ(cache.load("k"), std::nullopt);
  EXPECT_FALSE(std::filesystem::exists(cache.entry_path("k")));
  EXPECT_EQ(sink.count(BONSAI_LOG_WARN, "checksum mismatch"), 1);
  // Rebuilt entry is good again.
  ASSERT_TRUE(cache.store("k", kPtx));
  EXPECT_EQ(cache.load("k"), kPtx);
}

TEST(PtxCache, TruncatedEntryIsDeleted) {
  TempDir tmp;
  LogSink sink;
  const PtxCache cache(tmp.path(), sink.logger());
  ASSERT_TRUE(cache.store("k", kPtx));
  const std::string bytes = read_file(cache.entry_path("k"));
  write_file(cache.entry_path("k"), bytes.substr(0, bytes.size() - 10));
  EXPECT_EQ(cache.load("k"), std::nullopt);
  EXPECT_FALSE(std::filesystem::exists(cache.entry_path("k")));
  EXPECT_EQ(sink.count(BONSAI_LOG_WARN, "truncated"), 1);
  // Shorter than the header, and a file that is not an entry at all.
  write_file(cache.entry_path("k"), bytes.substr(0, 5));
  EXPECT_EQ(cache.load("k"), std::nullopt);
  EXPECT_FALSE(std::filesystem::exists(cache.entry_path("k")));
  write_file(cache.entry_path("k"), kPtx);
  EXPECT_EQ(cache.load("k"), std::nullopt);
  EXPECT_EQ(sink.count(BONSAI_LOG_WARN, "bad magic"), 1);
}

TEST(PtxCache, EntryFormatIsHeaderThenPayload) {
  // 8-byte magic, 8-byte length, 8-byte FNV-1a checksum, then the PTX.
  const std::string entry = bonsai::cuda::encode_ptx_entry("foobar");
  ASSERT_EQ(entry.size(), 24u + 6u);
  EXPECT_EQ(entry.substr(0, 8), "BSIPTX01");
  uint64_t length = 0;
  std::memcpy(&length, entry.data() + 8, 8);
  EXPECT_EQ(length, 6u);
  // FNV-1a 64 of "foobar" is 0x85944171f73967e8 (the published test vector).
  uint64_t checksum = 0;
  std::memcpy(&checksum, entry.data() + 16, 8);
  EXPECT_EQ(checksum, 0x85944171f73967e8ull);
  EXPECT_EQ(entry.substr(24), "foobar");
  std::string why;
  EXPECT_EQ(bonsai::cuda::decode_ptx_entry(entry, &why), "foobar");
}

TEST(PtxCache, UnwritableFolderWorksWithoutCachingAndWarnsOnce) {
  TempDir tmp;
  // A folder below a regular file cannot be created, even by root.
  write_file(tmp.path() / "file", "x");
  LogSink sink;
  const PtxCache cache(tmp.path() / "file" / "cuda-ptx", sink.logger());
  EXPECT_FALSE(cache.store("k", kPtx));
  EXPECT_FALSE(cache.store("k2", kPtx));
  EXPECT_EQ(cache.load("k"), std::nullopt);
  EXPECT_EQ(sink.count(BONSAI_LOG_WARN, "PTX cache not writable"), 1);
  EXPECT_EQ(sink.count(BONSAI_LOG_DEBUG, "PTX cache not writable"), 1);
}

TEST(PtxCache, StaleTemporaryFilesGoFreshOnesAndEntriesStay) {
  TempDir tmp;
  LogSink sink;
  const PtxCache cache(tmp.path(), sink.logger());
  ASSERT_TRUE(cache.store("0123456789abcdef", kPtx));
  const auto write = [&](const std::string &name) {
    std::ofstream(tmp.path() / name) << "partial";
    return tmp.path() / name;
  };
  // Left by processes killed mid-write two hours ago, and one writing now.
  const auto old_a = write("0123456789abcdef.ptx.tmp.4242.7f.0");
  const auto old_b = write("fedcba9876543210.ptx.tmp.99.1.3");
  const auto fresh = write("0011223344556677.ptx.tmp.77.2.1");
  const auto unrelated = write("notes.txt");
  const auto two_hours_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  for (const auto &p : {old_a, old_b, unrelated})
    std::filesystem::last_write_time(p, two_hours_ago);

  EXPECT_EQ(cache.remove_stale_temps(std::chrono::hours(1)), 2);
  EXPECT_FALSE(std::filesystem::exists(old_a));
  EXPECT_FALSE(std::filesystem::exists(old_b));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  EXPECT_TRUE(std::filesystem::exists(unrelated));
  EXPECT_EQ(cache.load("0123456789abcdef"), kPtx);
  // A missing folder is no error.
  const PtxCache absent(tmp.path() / "never-created", sink.logger());
  EXPECT_EQ(absent.remove_stale_temps(std::chrono::hours(1)), 0);
}

TEST(PtxCache, ConcurrentWritersLeaveOneValidEntry) {
  TempDir tmp;
  LogSink sink;
  const PtxCache cache(tmp.path(), sink.logger());
  std::string big(1 << 20, 'p'); // large enough for writes to overlap
  for (size_t i = 0; i < big.size(); i += 97)
    big[i] = static_cast<char>('a' + i % 26);
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&] {
      for (int i = 0; i < 5; ++i)
        EXPECT_TRUE(cache.store("shared", big));
    });
  std::thread reader([&] {
    for (int i = 0; i < 20; ++i) {
      const auto got = cache.load("shared"); // never a torn entry
      if (got) {
        EXPECT_EQ(got->size(), big.size());
      }
    }
  });
  for (auto &w : writers)
    w.join();
  reader.join();
  EXPECT_EQ(cache.load("shared"), big);
  int files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(tmp.path()))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
  EXPECT_EQ(sink.count(BONSAI_LOG_WARN, "corrupt"), 0);
}

// ---- JIT policy: cache, compiler and loader together ----

struct FakeToolchain {
  int compiles = 0;
  std::vector<std::string> loaded;
  bool refuse_next = false; // the driver refuses the next image once
  bool refuse_ptx = false;  // the driver refuses every PTX (too new for it), not CUBINs
  bool refuse_cubin = false;
  std::string refusal = "CUDA_ERROR_INVALID_PTX (218): refused by the test";
  int driver_version = 13000;

  bonsai::cuda::JitTools tools(const PtxCache *cache, bonsai::cuda::Logger log) {
    bonsai::cuda::JitTools t;
    t.cache = cache;
    t.nvrtc_version = "13.0";
    t.driver_version = driver_version;
    t.log = log;
    t.compile = [this](const bonsai::cuda::CompileRequest &request) {
      ++compiles;
      const bool cubin = request.output == bonsai::cuda::CompileOutput::cubin;
      return std::string(cubin ? "CUBIN" : "PTX") + " of " + request.program_name + " for " +
             request.options.front();
    };
    return t;
  }
  bonsai::cuda::PtxLoader loader() {
    return [this](const std::string &image) {
      const bool cubin = image.rfind("CUBIN", 0) == 0;
      if (refuse_next || (refuse_ptx && !cubin) || (refuse_cubin && cubin)) {
        refuse_next = false;
        return cubin ? std::string("CUDA_ERROR_NO_BINARY_FOR_GPU (209): refused by the test")
                     : refusal;
      }
      loaded.push_back(image);
      return std::string();
    };
  }
};

const bonsai::cuda::JitProgram kProgram{"prog.cu", "extern \"C\" __global__ void k() {}",
                                        "compute_90"};

TEST(KernelJit, SecondLoadComesFromTheCacheWithoutCompiling) {
  TempDir tmp;
  LogSink sink;
  const PtxCache cache(tmp.path(), sink.logger());
  FakeToolchain fake;
  const auto first =
      bonsai::cuda::jit_load(kProgram, fake.tools(&cache, sink.logger()), fake.loader());
  EXPECT_FALSE(first.cache_hit);
  EXPECT_EQ(first.compiles, 1);
  EXPECT_EQ(sink.count(BONSAI_LOG_INFO, "PTX cache miss"), 1);
  EXPECT_EQ(sink.count(BONSAI_LOG_INFO, "NVRTC compile"), 1);

  const auto second =
      bonsai::cuda::jit_load(kProgram, fake.tools(&cache, sink.logger()), fake.loader());
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.compiles, 0);
  EXPECT_EQ(fake.compiles, 1);
  EXPECT_EQ(sink.count(BONSAI_LOG_DEBUG, "PTX cache hit"), 1);
  EXPECT_EQ(sink.count(BONSAI_LOG_INFO, "NVRTC compile"), 1);
  ASSERT_EQ(fake.loaded.size(), 2u);
  EXPECT_EQ(fake.loaded[0], fake.loaded[1]);
  EXPECT_EQ(fake.loaded[0], "PTX of prog.cu for --gpu-architecture=compute_90");
}

TEST(KernelJit, CachedEntryTheDriverRefusesIsDeletedAndRebuilt) {
  TempDir tmp;
  LogSink sink;
  const PtxCache cache(tmp.path(), sink.logger());
  FakeToolchain fake;
  const auto first =
      bonsai::cuda::jit_load(kProgram, fake.tools(&cache, sink.logger()), fake.loader());
  fake.refuse_next = true;
  const auto again =
      bonsai::cuda::jit_load(kProgram, fake.tools(&cache, sink.logger()), fake.loader());
  EXPECT_TRUE(again.evicted_entry);
  EXPECT_FALSE(again.cache_hit);
  EXPECT_EQ(again.compiles, 1);
  EXPECT_EQ(sink.count(BONSAI_LOG_WARN, "did not load (CUDA_ERROR_INVALID_PTX (218): refused by "
                                        "the test); deleted, rebuilding"),
            1);
  // The rebuilt entry is stored and used next time.
  const auto third =
      bonsai::cuda::jit_load(kProgram, fake.tools(&cache, sink.logger()), fake.loader());
  EXPECT_TRUE(third.cache_hit);
  EXPECT_EQ(fake.compiles, 2);
  EXPECT_EQ(first.key, third.key);
}

TEST(KernelJit, CorruptEntryOnDiskIsRebuilt) {
  TempDir tmp;
  LogSink sink;
  const PtxCache cache(tmp.path(), sink.logger());
  FakeToolchain fake;
  const auto first =
      bonsai::cuda::jit_load(kProgram, fake.tools(&cache, sink.logger()), fake.loader());
  write_file(cache.entry_path(first.key), "garbage");
  const auto again =
      bonsai::cuda::jit_load(kProgram, fake.tools(&cache, sink.logger()), fake.loader());
  EXPECT_FALSE(again.cache_hit);
  EXPECT_EQ(again.compiles, 1);
  EXPECT_EQ(cache.load(first.key), fake.loaded.back());
}

TEST(KernelJit, WithoutCacheEveryLoadCompiles) {
  LogSink sink;
  FakeToolchain fake;
  for (int i = 0; i < 2; ++i) {
    const auto outcome =
        bonsai::cuda::jit_load(kProgram, fake.tools(nullptr, sink.logger()), fake.loader());
    EXPECT_FALSE(outcome.cache_hit);
  }
  EXPECT_EQ(fake.compiles, 2);
}

// A driver that cannot take NVRTC's PTX gets a CUBIN for the device's own
// architecture, which the cache keeps under its own key: the next start
// loads it without NVRTC.
TEST(KernelJit, FreshPtxTheDriverRefusesFallsBackToACubinForTheExactArchitecture) {
  TempDir tmp;
  LogSink sink;
  const PtxCache cache(tmp.path(), sink.logger());
  FakeToolchain fake;
  fake.refuse_ptx = true;
  const auto first =
      bonsai::cuda::jit_load(kProgram, fake.tools(&cache, sink.logger()), fake.loader());
  EXPECT_TRUE(first.cubin);
  EXPECT_EQ(first.compiles, 2);
  ASSERT_EQ(fake.loaded.size(), 1u);
  EXPECT_EQ(fake.loaded[0], "CUBIN of prog.cu for --gpu-architecture=sm_90");
  EXPECT_EQ(sink.count(BONSAI_LOG_WARN, "the driver refused the PTX NVRTC made for prog.cu "
                                        "(compute_90): CUDA_ERROR_INVALID_PTX (218): refused by "
                                        "the test; compiling a CUBIN for sm_90 instead"),
            1);
  EXPECT_NE(first.cubin_key, first.key);
  EXPECT_FALSE(cache.load(first.key).has_value()); // no PTX entry this driver refuses

  const auto second =
      bonsai::cuda::jit_load(kProgram, fake.tools(&cache, sink.logger()), fake.loader());
  EXPECT_TRUE(second.cache_hit);
  EXPECT_TRUE(second.cubin);
  EXPECT_EQ(second.compiles, 0);
  EXPECT_EQ(fake.compiles, 2);
  EXPECT_EQ(fake.loaded.back(), "CUBIN of prog.cu for --gpu-architecture=sm_90");
}

TEST(KernelJit, PtxAndCubinBothRefusedIsAnErrorWithBothReasons) {
  LogSink sink;
  FakeToolchain fake;
  fake.refuse_ptx = true;
  fake.refuse_cubin = true;
  try {
    bonsai::cuda::jit_load(kProgram, fake.tools(nullptr, sink.logger()), fake.loader());
    FAIL() << "expected a PluginError";
  } catch (const bonsai::cuda::PluginError &error) {
    EXPECT_EQ(error.status(), BONSAI_ERR_INTERNAL);
    EXPECT_THAT(std::string(error.what()), HasSubstr("prog.cu"));
    // The driver's own reasons are kept, not dropped.
    EXPECT_THAT(std::string(error.what()),
                HasSubstr("cuModuleLoadData: CUDA_ERROR_INVALID_PTX (218): refused by the test"));
    EXPECT_THAT(std::string(error.what()),
                HasSubstr("the CUBIN for sm_90: CUDA_ERROR_NO_BINARY_FOR_GPU (209)"));
  }
  EXPECT_EQ(fake.compiles, 2);
}

TEST(KernelJit, PtxTooNewForTheDriverSaysWhichToUpdate) {
  LogSink sink;
  FakeToolchain fake;
  fake.driver_version = 12040; // CUDA 12.4 driver, NVRTC 13.0
  fake.refuse_ptx = true;
  fake.refuse_cubin = true;
  fake.refusal = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222): the provided PTX was compiled with "
                 "an unsupported toolchain.";
  try {
    bonsai::cuda::jit_load(kProgram, fake.tools(nullptr, sink.logger()), fake.loader());
    FAIL() << "expected a PluginError";
  } catch (const bonsai::cuda::PluginError &error) {
    const std::string what = error.what();
    EXPECT_THAT(what, HasSubstr("CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"));
    EXPECT_THAT(what, HasSubstr("the driver supports CUDA 12.4 and NVRTC is 13.0"));
    EXPECT_THAT(what, HasSubstr("install a driver for CUDA 13.0 or later"));
  }
}

TEST(KernelJit, CubinArchitectureIsTheRealOneOfTheVirtual) {
  EXPECT_EQ(bonsai::cuda::cubin_arch("compute_90"), "sm_90");
  EXPECT_EQ(bonsai::cuda::cubin_arch("compute_120"), "sm_120");
  EXPECT_EQ(bonsai::cuda::cubin_arch("sm_80"), "sm_80");
}

TEST(KernelJit, DriverNvrtcHintOnlyWhenTheDriverIsOlder) {
  EXPECT_EQ(bonsai::cuda::driver_nvrtc_hint(13000, "13.0"), "");
  EXPECT_EQ(bonsai::cuda::driver_nvrtc_hint(13010, "13.0"), "");
  EXPECT_EQ(bonsai::cuda::driver_nvrtc_hint(12080, "12.4"), "");
  EXPECT_THAT(bonsai::cuda::driver_nvrtc_hint(12080, "13.0"), HasSubstr("CUDA 12.8"));
  EXPECT_THAT(bonsai::cuda::driver_nvrtc_hint(13000, "13.1"), HasSubstr("NVRTC is 13.1"));
  EXPECT_EQ(bonsai::cuda::driver_nvrtc_hint(0, "13.0"), "");      // unknown driver
  EXPECT_EQ(bonsai::cuda::driver_nvrtc_hint(12040, "weird"), ""); // unparsable NVRTC
}

} // namespace
