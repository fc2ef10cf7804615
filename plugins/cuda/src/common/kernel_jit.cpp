#include "kernel_jit.hpp"

#include <chrono>
#include <cstdio>

#include "driver_library.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {

std::vector<std::string> jit_options(const std::string &arch) {
  // -default-device: kernels need no __device__ on helpers; fast math is not
  // used so results stay within f32 rounding of the reference.
  return {"--gpu-architecture=" + arch, "--std=c++17", "-default-device", "--fmad=true"};
}

std::string driver_nvrtc_hint(int driver_version, const std::string &nvrtc_version) {
  int nvrtc_major = 0, nvrtc_minor = 0;
  if (std::sscanf(nvrtc_version.c_str(), "%d.%d", &nvrtc_major, &nvrtc_minor) != 2 ||
      driver_version <= 0)
    return {};
  if (cuda_version_number(driver_version) >= nvrtc_major * 100 + nvrtc_minor)
    return {};
  const std::string driver = cuda_version_text(driver_version);
  return strformat("the driver supports CUDA %s and NVRTC is %d.%d: PTX from a newer NVRTC "
                   "needs a newer driver; install a driver for CUDA %d.%d or later, or put an "
                   "NVRTC of CUDA %s or older first on the library path",
                   driver.c_str(), nvrtc_major, nvrtc_minor, nvrtc_major, nvrtc_minor,
                   driver.c_str());
}

JitOutcome jit_load(const JitProgram &program, const JitTools &tools, const PtxLoader &load) {
  JitOutcome outcome;
  const std::vector<std::string> options = jit_options(program.arch);
  outcome.key = ptx_cache_key(
      {program.source, options, program.arch, tools.nvrtc_version, tools.driver_version});

  if (tools.cache != nullptr) {
    if (std::optional<std::string> cached = tools.cache->load(outcome.key)) {
      const std::string refused = load(*cached);
      if (refused.empty()) {
        outcome.cache_hit = true;
        tools.log.debug(strformat("PTX cache hit: %s for %s (%s)", program.name.c_str(),
                                  program.arch.c_str(), outcome.key.c_str()));
        return outcome;
      }
      tools.log.warn(strformat("PTX cache entry %s for %s did not load (%s); deleted, rebuilding",
                               outcome.key.c_str(), program.name.c_str(), refused.c_str()));
      tools.cache->remove(outcome.key);
      outcome.evicted_entry = true;
    } else {
      tools.log.info(strformat("PTX cache miss: %s for %s (%s)", program.name.c_str(),
                               program.arch.c_str(), outcome.key.c_str()));
    }
  }

  const auto start = std::chrono::steady_clock::now();
  const std::string ptx = tools.compile({program.name, program.source, options});
  ++outcome.compiles;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  tools.log.info(strformat("NVRTC compile: %s for %s in %.0f ms (%zu bytes of PTX)",
                           program.name.c_str(), program.arch.c_str(), ms, ptx.size()));
  if (const std::string refused = load(ptx); !refused.empty()) {
    const std::string hint = driver_nvrtc_hint(tools.driver_version, tools.nvrtc_version);
    fail(BONSAI_ERR_INTERNAL,
         strformat("the driver refused the PTX NVRTC made for %s (%s): cuModuleLoadData: %s%s%s",
                   program.name.c_str(), program.arch.c_str(), refused.c_str(),
                   hint.empty() ? "" : "; ", hint.c_str()));
  }
  if (tools.cache != nullptr)
    tools.cache->store(outcome.key, ptx);
  return outcome;
}

} // namespace bonsai::cuda
