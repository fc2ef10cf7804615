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
  bool tensor_cores = true;       // use the tensor-core GEMMs where the device has them
  bool prefill_int8 = true;       // on 8.0+, the int8 tensor-core GEMMs instead of the f16 ones
  bool int8_gemv = true;          // use the dp4a GEMVs for single-token Q1_0/Q2_0 matmuls
  bool persistent = false;        // build the persistent decode kernel (persistent_decode_wanted)
  bool attention_tc = true;       // prefill attention on tensor cores where the device has them
  int shared_per_block_optin = 0; // the device's opt-in shared memory per block (0: unknown)
  bool persistent_held = false;   // also its held-records kernels (persistent_records=registers)
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
  // The most dynamic shared bytes a launch of `name` may ask for: the
  // device's opt-in limit less the kernel's static shared memory (the
  // driver checks their sum). Throws like get() for an unknown name.
  int dynamic_shared_limit(const std::string &name) const;
  // Whether matmuls of several tokens may use the f16 tensor-core GEMMs.
  bool tensor_cores() const { return tensor_cores_; }
  // Whether they may use the int8 tensor-core GEMMs (then the f16 ones are not built).
  bool int8_mma() const { return int8_mma_; }
  // Whether single-token Q1_0/Q2_0 matmuls may use the int8 (dp4a) GEMVs.
  bool int8_gemv() const { return int8_gemv_; }
  // Whether the persistent decode kernels were built (decode=persistent,
  // or auto on sm_90+, with int8_gemv on and a device of sm_70+).
  bool persistent() const { return persistent_; }
  // Whether the options asked for them (they may still not be built).
  bool persistent_wanted() const { return persistent_wanted_; }
  // Whether its held-records kernels were built too (persistent_records=registers).
  bool persistent_held() const { return persistent_held_; }
  // Whether prefill attention may run on f16 tensor cores (8.0+).
  bool attention_tc() const { return attention_tc_; }
  // The device's compute capability, major number.
  int compute_major() const { return compute_major_; }

private:
  const Device &device_;
  bool int8_mma_ = false; // before tensor_cores_, which is initialized from it
  bool tensor_cores_ = false;
  bool int8_gemv_ = false;
  bool persistent_ = false;
  bool persistent_held_ = false;
  bool persistent_wanted_ = false;
  bool attention_tc_ = false;
  int compute_major_ = 0;
  std::vector<CUmodule> modules_;
  struct Entry {
    CUfunction function = nullptr;
    int dynamic_shared_limit = 0;
  };
  const Entry &entry(const std::string &name) const;
  void unload_modules() const;
  // Looks up `name` in `module` and raises its dynamic shared limit.
  Entry load_entry(CUmodule module, const std::string &name, int shared_per_block) const;

  std::map<std::string, Entry> functions_;
};

} // namespace bonsai::cuda
