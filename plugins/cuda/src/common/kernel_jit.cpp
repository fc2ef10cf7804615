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

std::string cubin_arch(const std::string &arch) {
  const std::string virtual_prefix = "compute_";
  return arch.rfind(virtual_prefix, 0) == 0 ? "sm_" + arch.substr(virtual_prefix.size()) : arch;
}

namespace {

// One image kind of a program: its options and cache key.
struct ImageRecipe {
  CompileOutput output;
  std::string arch;
  std::vector<std::string> options;
  std::string key;
  const char *what; // "PTX" or "CUBIN", for messages
};

ImageRecipe recipe(const JitProgram &program, const JitTools &tools, CompileOutput output) {
  ImageRecipe r;
  r.output = output;
  r.arch = output == CompileOutput::cubin ? cubin_arch(program.arch) : program.arch;
  r.options = jit_options(r.arch);
  r.key =
      ptx_cache_key({program.source, r.options, r.arch, tools.nvrtc_version, tools.driver_version});
  r.what = output == CompileOutput::cubin ? "CUBIN" : "PTX";
  return r;
}

// Loads the cached image of `r`, if any: true when it loaded. An entry the
// driver refuses is deleted.
bool load_cached(const JitProgram &program, const JitTools &tools, const ImageRecipe &r,
                 const PtxLoader &load, JitOutcome &outcome) {
  std::optional<std::string> cached = tools.cache->load(r.key);
  if (!cached)
    return false;
  if (const std::string refused = load(*cached); !refused.empty()) {
    tools.log.warn(
        strformat("PTX cache entry %s (%s) for %s did not load (%s); deleted, rebuilding",
                  r.key.c_str(), r.what, program.name.c_str(), refused.c_str()));
    tools.cache->remove(r.key);
    outcome.evicted_entry = true;
    return false;
  }
  outcome.cache_hit = true;
  outcome.cubin = r.output == CompileOutput::cubin;
  tools.log.debug(strformat("PTX cache hit: %s for %s (%s, %s)", program.name.c_str(),
                            r.arch.c_str(), r.what, r.key.c_str()));
  return true;
}

// NVRTC's image of `r`, timed and logged.
std::string compile(const JitProgram &program, const JitTools &tools, const ImageRecipe &r,
                    JitOutcome &outcome) {
  const auto start = std::chrono::steady_clock::now();
  std::string image = tools.compile({program.name, program.source, r.options, r.output});
  ++outcome.compiles;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  tools.log.info(strformat("NVRTC compile: %s for %s in %.0f ms (%zu bytes of %s)",
                           program.name.c_str(), r.arch.c_str(), ms, image.size(), r.what));
  return image;
}

} // namespace

JitOutcome jit_load(const JitProgram &program, const JitTools &tools, const PtxLoader &load) {
  JitOutcome outcome;
  const ImageRecipe ptx = recipe(program, tools, CompileOutput::ptx);
  const ImageRecipe cubin = recipe(program, tools, CompileOutput::cubin);
  outcome.key = ptx.key;
  outcome.cubin_key = cubin.key;

  if (tools.cache != nullptr) {
    // A CUBIN entry exists only where this driver refused the PTX.
    if (load_cached(program, tools, ptx, load, outcome) ||
        load_cached(program, tools, cubin, load, outcome))
      return outcome;
    if (!outcome.evicted_entry)
      tools.log.info(strformat("PTX cache miss: %s for %s (%s)", program.name.c_str(),
                               program.arch.c_str(), ptx.key.c_str()));
  }

  const std::string ptx_image = compile(program, tools, ptx, outcome);
  const std::string refused = load(ptx_image);
  if (refused.empty()) {
    if (tools.cache != nullptr)
      tools.cache->store(ptx.key, ptx_image);
    return outcome;
  }
  // The driver cannot JIT this PTX (typically: older than NVRTC). A CUBIN
  // for the device's own architecture needs no JIT.
  tools.log.warn(strformat("the driver refused the PTX NVRTC made for %s (%s): %s; compiling a "
                           "CUBIN for %s instead",
                           program.name.c_str(), program.arch.c_str(), refused.c_str(),
                           cubin.arch.c_str()));
  const std::string cubin_image = compile(program, tools, cubin, outcome);
  if (const std::string cubin_refused = load(cubin_image); !cubin_refused.empty()) {
    const std::string hint = driver_nvrtc_hint(tools.driver_version, tools.nvrtc_version);
    fail(BONSAI_ERR_INTERNAL,
         strformat("the driver refused the PTX NVRTC made for %s (%s): cuModuleLoadData: %s; "
                   "and the CUBIN for %s: %s%s%s",
                   program.name.c_str(), program.arch.c_str(), refused.c_str(), cubin.arch.c_str(),
                   cubin_refused.c_str(), hint.empty() ? "" : "; ", hint.c_str()));
  }
  outcome.cubin = true;
  if (tools.cache != nullptr)
    tools.cache->store(cubin.key, cubin_image);
  return outcome;
}

} // namespace bonsai::cuda
