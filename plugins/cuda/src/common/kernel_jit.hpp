#pragma once
// Turns a kernel program into a loaded module: PTX from the disk cache when
// present, else from NVRTC (then stored). A cached entry the driver refuses is
// deleted and rebuilt once. Where the driver refuses NVRTC's fresh PTX (a
// driver older than NVRTC), NVRTC compiles a CUBIN for the device's exact
// architecture instead, cached under its own key. Compiler and loader are
// injected, so this logic is tested without NVRTC or a GPU.
#include <functional>
#include <string>
#include <vector>

#include "logger.hpp"
#include "nvrtc_library.hpp"
#include "ptx_cache.hpp"

namespace bonsai::cuda {

struct JitProgram {
  std::string name;   // e.g. "bonsai_matmul.cu"
  std::string source; // complete CUDA C++ source
  std::string arch;   // e.g. "compute_90"; the CUBIN fallback targets "sm_90"
};

struct JitTools {
  const PtxCache *cache = nullptr; // NULL: caching off
  std::string nvrtc_version;       // part of the key
  int driver_version = 0;          // cuDriverGetVersion (e.g. 12040); part of the key
  // CUDA C++ -> PTX or CUBIN (throws PluginError on a compile error).
  std::function<std::string(const CompileRequest &)> compile;
  Logger log;
};

// Loads PTX or a CUBIN as a module. Returns "" when it loaded, else the
// driver's reason for refusing it (e.g. "CUDA_ERROR_UNSUPPORTED_PTX_VERSION
// (222): ...").
using PtxLoader = std::function<std::string(const std::string &image)>;

struct JitOutcome {
  bool cache_hit = false;     // the loaded image came from the cache
  int compiles = 0;           // NVRTC invocations (0 on a good hit)
  bool evicted_entry = false; // a cached entry failed to load and was deleted
  bool cubin = false;         // the loaded image is a CUBIN (the driver refused the PTX)
  std::string key;            // of the PTX entry
  std::string cubin_key;      // of the CUBIN entry
};

// What to do when the driver refuses fresh PTX, or "": a driver older than
// NVRTC cannot take NVRTC's PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).
std::string driver_nvrtc_hint(int driver_version, const std::string &nvrtc_version);

// The NVRTC options used for every program, for `arch`.
std::vector<std::string> jit_options(const std::string &arch);

// The real architecture of a virtual one: "compute_90" -> "sm_90".
std::string cubin_arch(const std::string &arch);

// Produces PTX (or, where the driver refuses it, a CUBIN) for `program` and
// hands it to `load`. Throws PluginError when compilation fails or neither
// freshly compiled image loads.
JitOutcome jit_load(const JitProgram &program, const JitTools &tools, const PtxLoader &load);

} // namespace bonsai::cuda
