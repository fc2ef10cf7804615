// Compiles every kernel program with NVRTC for the GPU generations the
// plugin targets and checks that every entry point the plugin looks up is in
// the PTX. Catches syntax and type errors in the kernel strings without a
// GPU. Skips where NVRTC cannot be loaded (no CUDA toolkit installed).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernel_jit.hpp"
#include "kernel_sources.hpp"
#include "nvrtc_library.hpp"
#include "plugin_error.hpp"

namespace {

using ::testing::HasSubstr;

const bonsai::cuda::NvrtcApi *nvrtc_or_null(std::string *why) {
  const bonsai::cuda::NvrtcLoad load = bonsai::cuda::load_nvrtc();
  *why = load.error;
  return load.api;
}

#define REQUIRE_NVRTC(api)                                                                         \
  std::string nvrtc_error;                                                                         \
  const bonsai::cuda::NvrtcApi *api = nvrtc_or_null(&nvrtc_error);                                 \
  if (api == nullptr)                                                                              \
  GTEST_SKIP() << "skipped: NVRTC not available (" << nvrtc_error << ")"

// Under ASan only NVRTC's allocations slow down: what it and ptxas make of
// each generation is checked in the plain build; the sanitized one keeps
// sm_90, where the plugin's own code around NVRTC runs the same way.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#define SKIP_OTHER_ARCHS_UNDER_ASAN(arch)                                                          \
  if (kSanitized && (arch) != "compute_90")                                                        \
  GTEST_SKIP() << "skipped under ASan: NVRTC's output for " << (arch)                              \
               << " is checked in the plain build"

class KernelPrograms : public ::testing::TestWithParam<std::string> {};

// The PTX also assembles for the exact GPU (register and shared memory
// limits are checked by ptxas) where the toolkit's ptxas is installed; the
// path of ptxas, or "" when there is none to run (or under ASan, whose
// plain build checks ptxas's verdict).
std::string ptxas_to_run() {
  if (kSanitized)
    return "";
  const char *env = std::getenv("BONSAI_PTXAS");
  const std::string ptxas = env != nullptr ? env : "/usr/local/cuda/bin/ptxas";
  return access(ptxas.c_str(), X_OK) == 0 ? ptxas : "";
}

void expect_ptxas_assembles_for_sm90(const std::string &ptxas, const std::string &program,
                                     const std::string &ptx) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("bonsai-ptxas-" + std::to_string(getpid()) + "-" + program + ".ptx");
  std::ofstream(file) << ptx;
  const std::string command = ptxas + " -arch=sm_90 " + file.string() + " -o /dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::filesystem::remove(file);
}

// Each program compiled once per generation (a compile is seconds) for every
// check. Programmatic dependent launch (option pdl) needs every kernel to
// wait for the grid before it (grid_entry(), common_prelude.cuh): on sm_90
// every entry point of every program runs griddepcontrol.wait; below sm_90,
// where the instruction does not exist, none does. compute_90's PTX goes
// through ptxas as well, where it is installed (the test says when it is not).
TEST_P(KernelPrograms, EveryProgramCompilesAndEveryEntryPointWaitsForTheGridOnSm90Only) {
  REQUIRE_NVRTC(api);
  const std::string arch = GetParam();
  SKIP_OTHER_ARCHS_UNDER_ASAN(arch);
  const std::string ptxas = arch == "compute_90" ? ptxas_to_run() : "";
  if (arch == "compute_90" && ptxas.empty())
    std::cout << "[ note     ] ptxas not run: none at $BONSAI_PTXAS or "
                 "/usr/local/cuda/bin/ptxas, or an ASan build\n";
  for (const bonsai::cuda::KernelProgram &program : bonsai::cuda::kernel_programs()) {
    SCOPED_TRACE(program.name + " for " + arch);
    std::string ptx;
    try {
      ptx = bonsai::cuda::compile_program(
          *api, {program.name, program.source, bonsai::cuda::jit_options(arch)});
    } catch (const bonsai::cuda::PluginError &error) {
      FAIL() << error.what();
    }
    EXPECT_THAT(ptx, HasSubstr(".target sm_" + arch.substr(8)));
    ASSERT_FALSE(program.entry_points.empty());
    for (const std::string &entry : program.entry_points)
      EXPECT_THAT(ptx, HasSubstr(".entry " + entry + "(")) << entry << " missing from the PTX";
    // Scanned by hand: std::regex trips GCC 12's -Wmaybe-uninitialized
    // under the sanitizer build's flags.
    int entries = 0;
    for (size_t begin = ptx.find(".entry "); begin != std::string::npos; ++entries) {
      const size_t name_end = ptx.find('(', begin);
      const std::string name = ptx.substr(begin + 7, name_end - begin - 7);
      const size_t end = ptx.find(".entry ", begin + 1);
      const std::string body = ptx.substr(begin, end == std::string::npos ? end : end - begin);
      EXPECT_EQ(body.find("griddepcontrol.wait") != std::string::npos, arch == "compute_90")
          << name << " for " << arch;
      begin = end;
    }
    EXPECT_GE(entries, static_cast<int>(program.entry_points.size())) << program.name;
    if (!ptxas.empty())
      expect_ptxas_assembles_for_sm90(ptxas, program.name, ptx);
  }
}

// Turing (the oldest NVRTC 13 still targets is Turing; 75), Ampere, Ada and Hopper.
INSTANTIATE_TEST_SUITE_P(Arch, KernelPrograms,
                         ::testing::Values("compute_75", "compute_80", "compute_89", "compute_90"),
                         [](const auto &info) { return info.param; });

// The fallback for a driver older than NVRTC: a CUBIN for the exact GPU,
// an ELF image that defines every entry point.
TEST(KernelPrograms, CubinForSm90IsAnElfImageWithEveryEntryPoint) {
  REQUIRE_NVRTC(api);
  const bonsai::cuda::KernelProgram &program = bonsai::cuda::kernel_programs().at(1); // layer
  const std::string cubin = bonsai::cuda::compile_program(
      *api, {program.name, program.source, bonsai::cuda::jit_options("sm_90"),
             bonsai::cuda::CompileOutput::cubin});
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f"
                                "ELF");
  for (const std::string &entry : program.entry_points)
    EXPECT_NE(cubin.find(entry + '\0'), std::string::npos) << entry << " missing from the CUBIN";
}

TEST(Nvrtc, ReportsVersionAndLibrary) {
  REQUIRE_NVRTC(api);
  const bonsai::cuda::NvrtcLoad load = bonsai::cuda::load_nvrtc();
  EXPECT_FALSE(load.library.empty());
  EXPECT_THAT(load.version, ::testing::MatchesRegex("[0-9]+\\.[0-9]+"));
}

TEST(Nvrtc, CompileErrorCarriesTheCompilerLog) {
  REQUIRE_NVRTC(api);
  try {
    bonsai::cuda::compile_program(*api,
                                  {"broken.cu", "extern \"C\" __global__ void k() { int x = ; }",
                                   bonsai::cuda::jit_options("compute_90")});
    FAIL() << "a syntax error compiled";
  } catch (const bonsai::cuda::PluginError &error) {
    EXPECT_EQ(error.status(), BONSAI_ERR_INTERNAL);
    EXPECT_THAT(std::string(error.what()), HasSubstr("broken.cu"));
    EXPECT_THAT(std::string(error.what()), HasSubstr("error"));
  }
}

TEST(KernelSources, EveryWeightTypeHasItsKernels) {
  // The plugin launches bonsai_{gemv,gemm,gemv_swiglu,gemm_swiglu,get_rows}_<type>.
  std::vector<std::string> all;
  for (const auto &program : bonsai::cuda::kernel_programs())
    all.insert(all.end(), program.entry_points.begin(), program.entry_points.end());
  for (unsigned type : {0u, 1u, 8u, 30u, 41u, 42u}) {
    const char *suffix = bonsai::cuda::kernel_type_suffix(type);
    ASSERT_NE(suffix, nullptr) << type;
    for (const char *kind : {"bonsai_gemv_", "bonsai_gemm_", "bonsai_gemv_swiglu_",
                             "bonsai_gemm_swiglu_", "bonsai_get_rows_"})
      EXPECT_THAT(all, ::testing::Contains(std::string(kind) + suffix));
  }
  EXPECT_EQ(bonsai::cuda::kernel_type_suffix(2), nullptr); // Q4_0: no kernels
}

} // namespace
