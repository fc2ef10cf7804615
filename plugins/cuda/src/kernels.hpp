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
  int compute_major = 0; // programs needing a newer device are not built
  const PtxCache *cache; // NULL: caching off
  Logger log;
  bool tensor_cores = true; // use the tensor-core GEMMs where the device has them
  bool int8_gemv = true;    // use the dp4a GEMVs for single-token Q1_0/Q2_0 matmuls
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
  bool has(const std::string &name) const { return functions_.count(name) != 0; }
  // Whether matmuls of several tokens may use the tensor-core GEMMs.
  bool tensor_cores() const { return tensor_cores_; }
  // Whether single-token Q1_0/Q2_0 matmuls may use the int8 (dp4a) GEMVs.
  bool int8_gemv() const { return int8_gemv_; }

private:
  const Device &device_;
  bool tensor_cores_ = false;
  bool int8_gemv_ = false;
  std::vector<CUmodule> modules_;
  std::map<std::string, CUfunction> functions_;
};

} // namespace bonsai::cuda
