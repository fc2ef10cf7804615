#include "kernels.hpp"

#include "kernel_jit.hpp"
#include "kernel_sources.hpp"
#include "nvrtc_library.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {

Kernels::Kernels(const Device &device, const KernelLoadConfig &config)
    : device_(device), tensor_cores_(config.tensor_cores && config.compute_major >= 7),
      int8_gemv_(config.int8_gemv) {
  const NvrtcLoad nvrtc = load_nvrtc();
  if (nvrtc.api == nullptr)
    fail(BONSAI_ERR_UNSUPPORTED, "the CUDA plugin compiles its kernels at run time and needs "
                                 "NVRTC: " +
                                     nvrtc.error);
  JitTools tools;
  tools.cache = config.cache;
  tools.nvrtc_version = nvrtc.version;
  tools.log = config.log;
  const NvrtcApi &api = *nvrtc.api;
  tools.compile = [&api](const CompileRequest &request) { return compile_to_ptx(api, request); };

  try {
    for (const KernelProgram &program : kernel_programs()) {
      if (program.min_compute_major > config.compute_major ||
          (program.feature == ProgramFeature::tensor_cores && !tensor_cores_) ||
          (program.feature == ProgramFeature::int8_gemv && !int8_gemv_))
        continue; // not for this device, or its option is off
      CUmodule module = nullptr;
      const PtxLoader load = [&](const std::string &ptx) {
        module = nullptr;
        return device_.api().cuModuleLoadData(&module, ptx.c_str()) == kCudaSuccess;
      };
      jit_load({program.name, program.source, config.arch}, tools, load);
      modules_.push_back(module);
      for (const std::string &entry : program.entry_points) {
        CUfunction function = nullptr;
        device_.check(device_.api().cuModuleGetFunction(&function, module, entry.c_str()),
                      ("cuModuleGetFunction " + entry).c_str());
        functions_[entry] = function;
      }
    }
  } catch (...) {
    for (CUmodule module : modules_)
      device_.api().cuModuleUnload(module);
    throw;
  }
}

Kernels::~Kernels() {
  for (CUmodule module : modules_)
    device_.api().cuModuleUnload(module);
}

CUfunction Kernels::get(const std::string &name) const {
  const auto it = functions_.find(name);
  if (it == functions_.end())
    fail(BONSAI_ERR_INTERNAL, "no kernel named " + name);
  return it->second;
}

} // namespace bonsai::cuda
