#include "kernels.hpp"

#include <algorithm>

#include "kernel_jit.hpp"
#include "kernel_sources.hpp"
#include "nvrtc_library.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {

Kernels::Kernels(const Device &device, const KernelLoadConfig &config)
    : device_(device),
      int8_mma_(config.tensor_cores && config.prefill_int8 && config.compute_major >= 8),
      // The f16 tensor-core GEMMs serve where the int8 ones do not.
      tensor_cores_(config.tensor_cores && config.compute_major >= 7 && !int8_mma_),
      int8_gemv_(config.int8_gemv),
      persistent_(config.persistent && config.int8_gemv && config.compute_major >= 7),
      persistent_held_(persistent_ && config.persistent_held),
      persistent_wanted_(config.persistent),
      attention_tc_(config.attention_tc && config.compute_major >= 8),
      compute_major_(config.compute_major) {
  const NvrtcLoad nvrtc = load_nvrtc();
  if (nvrtc.api == nullptr)
    fail(BONSAI_ERR_UNSUPPORTED, "the CUDA plugin compiles its kernels at run time and needs "
                                 "NVRTC: " +
                                     nvrtc.error);
  JitTools tools;
  tools.cache = config.cache;
  tools.nvrtc_version = nvrtc.version;
  tools.log = config.log;
  // The driver's CUDA version beside NVRTC's: an older driver refuses newer
  // PTX, and the failure then says which to update.
  device_.check(device_.api().cuDriverGetVersion(&tools.driver_version), "cuDriverGetVersion");
  config.log.info(strformat("CUDA driver %s, NVRTC %s (%s)",
                            cuda_version_text(tools.driver_version).c_str(), nvrtc.version.c_str(),
                            nvrtc.library.c_str()));
  if (const std::string hint = driver_nvrtc_hint(tools.driver_version, nvrtc.version);
      !hint.empty())
    config.log.warn(hint);
  const NvrtcApi &api = *nvrtc.api;
  tools.compile = [&api](const CompileRequest &request) { return compile_program(api, request); };

  const int shared_per_block = std::max(config.shared_per_block_optin, kDefaultSharedPerBlock);
  try {
    for (const KernelProgram &program : kernel_programs()) {
      if (program.min_compute_major > config.compute_major ||
          (program.feature == ProgramFeature::tensor_cores && !tensor_cores_) ||
          (program.feature == ProgramFeature::int8_mma && !int8_mma_) ||
          (program.feature == ProgramFeature::int8_gemv && !int8_gemv_) ||
          (program.feature == ProgramFeature::persistent && !persistent_) ||
          (program.feature == ProgramFeature::persistent_held && !persistent_held_) ||
          (program.feature == ProgramFeature::attention_tc && !attention_tc_))
        continue; // not for this device, or its option is off
      CUmodule module = nullptr;
      const PtxLoader load = [&](const std::string &ptx) {
        module = nullptr;
        const CUresult result = device_.api().cuModuleLoadData(&module, ptx.c_str());
        return result == kCudaSuccess ? std::string() : cuda_error_text(device_.api(), result);
      };
      jit_load({program.name, program.source, config.arch}, tools, load);
      modules_.push_back(module);
      for (const std::string &entry : program.entry_points)
        functions_[entry] = load_entry(module, entry, shared_per_block);
    }
  } catch (...) {
    unload_modules(); // no destructor runs for a constructor that throws
    throw;
  }
}

Kernels::~Kernels() {
  unload_modules();
}

void Kernels::unload_modules() const {
  if (device_.abandoned())
    return; // the driver unloads them with the primary context
  for (CUmodule module : modules_)
    device_.api().cuModuleUnload(module);
}

Kernels::Entry Kernels::load_entry(CUmodule module, const std::string &name,
                                   int shared_per_block) const {
  const DriverApi &api = device_.api();
  Entry entry;
  device_.check(api.cuModuleGetFunction(&entry.function, module, name.c_str()),
                ("cuModuleGetFunction " + name).c_str());
  int static_bytes = 0;
  device_.check(api.cuFuncGetAttribute(&static_bytes, kFuncAttrSharedSizeBytes, entry.function),
                ("cuFuncGetAttribute " + name).c_str());
  // Past 48 KB in all, a block must opt in; doing it once here lets every
  // launch use what the device has.
  entry.dynamic_shared_limit = kDefaultSharedPerBlock - static_bytes;
  if (shared_per_block > kDefaultSharedPerBlock) {
    const int raised = shared_per_block - static_bytes;
    device_.check(
        api.cuFuncSetAttribute(entry.function, kFuncAttrMaxDynamicSharedSizeBytes, raised),
        ("cuFuncSetAttribute " + name).c_str());
    entry.dynamic_shared_limit = raised;
  }
  return entry;
}

const Kernels::Entry &Kernels::entry(const std::string &name) const {
  const auto it = functions_.find(name);
  if (it == functions_.end())
    fail(BONSAI_ERR_INTERNAL, "no kernel named " + name);
  return it->second;
}

CUfunction Kernels::get(const std::string &name) const {
  return entry(name).function;
}

int Kernels::dynamic_shared_limit(const std::string &name) const {
  return entry(name).dynamic_shared_limit;
}

} // namespace bonsai::cuda
