// libbonsai_failing_nvrtc.so: a stand-in for libnvrtc.so (select it with
// BONSAI_NVRTC) whose every compile fails with a compiler log, as NVRTC does
// on a kernel it cannot build. Lets a test drive the plugin's compile-error
// path end to end, in a child process (NVRTC is loaded once per process),
// without the CUDA toolkit.
#include <cstddef>
#include <cstring>

#include "cuda_abi_decls.hpp"

using namespace bonsai::cuda;

namespace {

constexpr nvrtcResult kCompilationFailed = 6; // NVRTC_ERROR_COMPILATION
constexpr nvrtcResult kInvalidInput = 3;      // NVRTC_ERROR_INVALID_INPUT
constexpr char kLog[] = "stand-in.cu(1): error: this stand-in for NVRTC compiles nothing\n";

// The one program object every create returns: nothing is ever built.
nvrtcProgram_opaque *the_program() {
  static char storage;
  return reinterpret_cast<nvrtcProgram_opaque *>(&storage);
}

} // namespace

#define BONSAI_NVRTC_API extern "C" __attribute__((visibility("default")))

BONSAI_NVRTC_API nvrtcResult nvrtcVersion(int *major, int *minor) {
  *major = 13;
  *minor = 0;
  return kNvrtcSuccess;
}
BONSAI_NVRTC_API const char *nvrtcGetErrorString(nvrtcResult result) {
  return result == kCompilationFailed ? "NVRTC_ERROR_COMPILATION" : "NVRTC_ERROR (stand-in)";
}
BONSAI_NVRTC_API nvrtcResult nvrtcCreateProgram(nvrtcProgram *program, const char *, const char *,
                                                int, const char *const *, const char *const *) {
  *program = the_program();
  return kNvrtcSuccess;
}
BONSAI_NVRTC_API nvrtcResult nvrtcDestroyProgram(nvrtcProgram *program) {
  *program = nullptr;
  return kNvrtcSuccess;
}
BONSAI_NVRTC_API nvrtcResult nvrtcCompileProgram(nvrtcProgram, int, const char *const *) {
  return kCompilationFailed;
}
BONSAI_NVRTC_API nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram, size_t *size) {
  *size = sizeof kLog; // with the terminator, as NVRTC counts it
  return kNvrtcSuccess;
}
BONSAI_NVRTC_API nvrtcResult nvrtcGetProgramLog(nvrtcProgram, char *log) {
  std::memcpy(log, kLog, sizeof kLog);
  return kNvrtcSuccess;
}
// Nothing compiles, so there is never an image to return.
BONSAI_NVRTC_API nvrtcResult nvrtcGetPTXSize(nvrtcProgram, size_t *) {
  return kInvalidInput;
}
BONSAI_NVRTC_API nvrtcResult nvrtcGetPTX(nvrtcProgram, char *) {
  return kInvalidInput;
}
BONSAI_NVRTC_API nvrtcResult nvrtcGetCUBINSize(nvrtcProgram, size_t *) {
  return kInvalidInput;
}
BONSAI_NVRTC_API nvrtcResult nvrtcGetCUBIN(nvrtcProgram, char *) {
  return kInvalidInput;
}
