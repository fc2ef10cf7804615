#include "kernel_jit.hpp"

#include <chrono>

#include "plugin_error.hpp"

namespace bonsai::cuda {

std::vector<std::string> jit_options(const std::string &arch) {
  // -default-device: kernels need no __device__ on helpers; fast math is not
  // used so results stay within f32 rounding of the reference.
  return {"--gpu-architecture=" + arch, "--std=c++17", "-default-device", "--fmad=true"};
}

JitOutcome jit_load(const JitProgram &program, const JitTools &tools, const PtxLoader &load) {
  JitOutcome outcome;
  const std::vector<std::string> options = jit_options(program.arch);
  outcome.key = ptx_cache_key({program.source, options, program.arch, tools.nvrtc_version});

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
  if (const std::string refused = load(ptx); !refused.empty())
    fail(BONSAI_ERR_INTERNAL,
         strformat("the driver refused the PTX NVRTC made for %s (%s): cuModuleLoadData: %s",
                   program.name.c_str(), program.arch.c_str(), refused.c_str()));
  if (tools.cache != nullptr)
    tools.cache->store(outcome.key, ptx);
  return outcome;
}

} // namespace bonsai::cuda
