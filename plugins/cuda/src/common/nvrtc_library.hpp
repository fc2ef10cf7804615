#pragma once
// NVRTC, loaded with dlopen on first use, and a CUDA C++ -> PTX or CUBIN
// compile.
#include <string>
#include <vector>

#include "cuda_abi_decls.hpp"

namespace bonsai::cuda {

struct NvrtcApi {
  nvrtcVersion_t nvrtcVersion = nullptr;
  nvrtcGetErrorString_t nvrtcGetErrorString = nullptr;
  nvrtcCreateProgram_t nvrtcCreateProgram = nullptr;
  nvrtcDestroyProgram_t nvrtcDestroyProgram = nullptr;
  nvrtcCompileProgram_t nvrtcCompileProgram = nullptr;
  nvrtcGetPTXSize_t nvrtcGetPTXSize = nullptr;
  nvrtcGetPTX_t nvrtcGetPTX = nullptr;
  nvrtcGetCUBINSize_t nvrtcGetCUBINSize = nullptr;
  nvrtcGetCUBIN_t nvrtcGetCUBIN = nullptr;
  nvrtcGetProgramLogSize_t nvrtcGetProgramLogSize = nullptr;
  nvrtcGetProgramLog_t nvrtcGetProgramLog = nullptr;
};

struct NvrtcLoad {
  const NvrtcApi *api = nullptr; // NULL when NVRTC is unusable
  std::string library;           // the file that opened
  std::string version;           // "13.0"
  std::string error;             // why `api` is NULL
};

// The candidates tried in order: $BONSAI_NVRTC when set, else the unversioned
// name, the sonames of CUDA 13/12/11.2, then the toolkit's default folder.
std::vector<std::string> nvrtc_library_candidates();

// Loads NVRTC once per process (thread-safe); later calls return the same.
NvrtcLoad load_nvrtc();

// What a compile produces: PTX text for a virtual architecture
// ("compute_90", JIT-compiled by the driver), or a CUBIN for a real one
// ("sm_90", loaded as is: for a driver too old for NVRTC's PTX).
enum class CompileOutput { ptx, cubin };

struct CompileRequest {
  std::string program_name; // for NVRTC's messages, e.g. "bonsai_matmul.cu"
  std::string source;
  std::vector<std::string> options; // e.g. "--gpu-architecture=compute_90"
  CompileOutput output = CompileOutput::ptx;
};

// Compiles to the requested image. Throws PluginError(INTERNAL) with
// NVRTC's log on failure.
std::string compile_program(const NvrtcApi &api, const CompileRequest &request);

} // namespace bonsai::cuda
