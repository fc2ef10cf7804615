#pragma once
// The context's compiled kernels: every program of kernel_programs() JIT
// compiled (or taken from the PTX cache) for the device's arch, loaded as a
// module, and its entry points looked up by name.
#include <map>
#include <string>
#include <vector>

#include "device.hpp"
#include "logger.hpp"
#include "ptx_cache.hpp"

namespace bonsai::cuda {

struct KernelLoadConfig {
  std::string arch;      // e.g. "compute_90"
  const PtxCache *cache; // NULL: caching off
  Logger log;
};

class Kernels {
public:
  // Throws PluginError when NVRTC is missing, a program fails to compile or
  // the driver refuses freshly compiled PTX.
  Kernels(const Device &device, const KernelLoadConfig &config);
  ~Kernels();
  Kernels(const Kernels &) = delete;
  Kernels &operator=(const Kernels &) = delete;

  // Throws PluginError(INTERNAL) for an unknown name.
  CUfunction get(const std::string &name) const;

private:
  const Device &device_;
  std::vector<CUmodule> modules_;
  std::map<std::string, CUfunction> functions_;
};

} // namespace bonsai::cuda
