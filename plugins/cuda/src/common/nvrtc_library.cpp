#include "nvrtc_library.hpp"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>

#include "dynamic_library.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {
namespace {

std::string resolve_all(void *handle, NvrtcApi &api) {
  const std::pair<const char *, bool> results[] = {
#define BONSAI_RESOLVE(field) {#field, resolve_symbol(handle, #field, &api.field)}
      BONSAI_RESOLVE(nvrtcVersion),        BONSAI_RESOLVE(nvrtcGetErrorString),
      BONSAI_RESOLVE(nvrtcCreateProgram),  BONSAI_RESOLVE(nvrtcDestroyProgram),
      BONSAI_RESOLVE(nvrtcCompileProgram), BONSAI_RESOLVE(nvrtcGetPTXSize),
      BONSAI_RESOLVE(nvrtcGetPTX),         BONSAI_RESOLVE(nvrtcGetProgramLogSize),
      BONSAI_RESOLVE(nvrtcGetProgramLog),  BONSAI_RESOLVE(nvrtcGetCUBINSize),
      BONSAI_RESOLVE(nvrtcGetCUBIN),
#undef BONSAI_RESOLVE
  };
  for (const auto &[name, found] : results)
    if (!found)
      return name;
  return {};
}

struct NvrtcEntry {
  NvrtcApi api;
  NvrtcLoad load;
};

std::unique_ptr<NvrtcEntry> open_nvrtc() {
  auto entry = std::make_unique<NvrtcEntry>();
  const OpenedLibrary opened = open_first_library(nvrtc_library_candidates());
  if (opened.handle == nullptr) {
    entry->load.error = "NVRTC not found: " + opened.error;
    return entry;
  }
  entry->load.library = opened.path;
  if (const std::string missing = resolve_all(opened.handle, entry->api); !missing.empty()) {
    entry->load.error = strformat("%s lacks the function %s", opened.path.c_str(), missing.c_str());
    return entry;
  }
  int major = 0;
  int minor = 0;
  if (entry->api.nvrtcVersion(&major, &minor) != kNvrtcSuccess) {
    entry->load.error = opened.path + ": nvrtcVersion failed";
    return entry;
  }
  entry->load.version = strformat("%d.%d", major, minor);
  entry->load.api = &entry->api;
  return entry;
}

// Releases an NVRTC program on every path out of compile_program.
class ProgramGuard {
public:
  ProgramGuard(const NvrtcApi &api, nvrtcProgram program) : api_(api), program_(program) {}
  ~ProgramGuard() { api_.nvrtcDestroyProgram(&program_); }
  ProgramGuard(const ProgramGuard &) = delete;
  ProgramGuard &operator=(const ProgramGuard &) = delete;

private:
  const NvrtcApi &api_;
  nvrtcProgram program_;
};

std::string program_log(const NvrtcApi &api, nvrtcProgram program) {
  size_t size = 0;
  if (api.nvrtcGetProgramLogSize(program, &size) != kNvrtcSuccess || size <= 1)
    return {};
  std::string log(size, '\0');
  if (api.nvrtcGetProgramLog(program, log.data()) != kNvrtcSuccess)
    return {};
  log.resize(size - 1); // drop the terminator
  while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
    log.pop_back(); // the message may go on after the log
  return log;
}

} // namespace

std::vector<std::string> nvrtc_library_candidates() {
  if (const char *env = std::getenv("BONSAI_NVRTC"); env != nullptr && *env != '\0')
    return {env};
  return {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
          "/usr/local/cuda/lib64/libnvrtc.so"};
}

NvrtcLoad load_nvrtc() {
  static std::once_flag once;
  static std::unique_ptr<NvrtcEntry> entry;
  std::call_once(once, [] { entry = open_nvrtc(); });
  return entry->load;
}

std::string compile_program(const NvrtcApi &api, const CompileRequest &request) {
  nvrtcProgram program = nullptr;
  nvrtcResult result = api.nvrtcCreateProgram(&program, request.source.c_str(),
                                              request.program_name.c_str(), 0, nullptr, nullptr);
  if (result != kNvrtcSuccess)
    fail(BONSAI_ERR_INTERNAL,
         strformat("NVRTC cannot create program %s: %s", request.program_name.c_str(),
                   api.nvrtcGetErrorString(result)));
  ProgramGuard guard(api, program);
  std::vector<const char *> options;
  for (const std::string &option : request.options)
    options.push_back(option.c_str());
  result = api.nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  if (result != kNvrtcSuccess)
    fail(BONSAI_ERR_INTERNAL,
         strformat("NVRTC failed to compile %s: %s\n%s", request.program_name.c_str(),
                   api.nvrtcGetErrorString(result), program_log(api, program).c_str()));
  const bool cubin = request.output == CompileOutput::cubin;
  const char *what = cubin ? "CUBIN" : "PTX";
  size_t size = 0;
  if ((cubin ? api.nvrtcGetCUBINSize(program, &size) : api.nvrtcGetPTXSize(program, &size)) !=
          kNvrtcSuccess ||
      size == 0)
    fail(BONSAI_ERR_INTERNAL,
         strformat("NVRTC returned no %s for %s", what, request.program_name.c_str()));
  std::string image(size, '\0');
  if ((cubin ? api.nvrtcGetCUBIN(program, image.data()) : api.nvrtcGetPTX(program, image.data())) !=
      kNvrtcSuccess)
    fail(BONSAI_ERR_INTERNAL,
         strformat("NVRTC could not copy the %s of %s", what, request.program_name.c_str()));
  if (!cubin)
    while (!image.empty() && image.back() == '\0') // PTX text: drop the terminator
      image.pop_back();
  return image;
}

} // namespace bonsai::cuda
