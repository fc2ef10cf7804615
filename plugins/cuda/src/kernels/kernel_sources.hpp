#pragma once
// The CUDA C++ programs the plugin compiles with NVRTC at run time. Each
// program is the common prelude plus its own kernels; every kernel is
// extern "C" so its PTX entry name is the name listed here.
#include <string>
#include <vector>

namespace bonsai::cuda {

// The context option a program serves: it is not built when that is off.
enum class ProgramFeature {
  always,          // every context needs it
  tensor_cores,    // prefill GEMMs on f16 tensor cores (tensor_cores=on, prefill=f16 or before 8.0)
  int8_mma,        // prefill GEMMs on int8 tensor cores (tensor_cores=on, prefill=int8, 8.0+)
  int8_gemv,       // int8 decode GEMVs (int8_gemv=on)
  persistent,      // the persistent decode kernel (decode=persistent, int8_gemv=on)
  persistent_held, // its held-records kernels (also persistent_records=registers)
  attention_tc,    // prefill attention on f16 tensor cores (prefill_attention=tc, 8.0+)
};

struct KernelProgram {
  std::string name;                      // e.g. "bonsai_matmul.cu"
  std::string source;                    // complete source handed to NVRTC
  std::vector<std::string> entry_points; // kernels the plugin looks up
  int min_compute_major = 0;             // skipped on older devices (tensor cores: 7)
  ProgramFeature feature = ProgramFeature::always;
};

// Every program, in a fixed order (their sources are built once).
const std::vector<KernelProgram> &kernel_programs();

// Suffix of a weight type in kernel names ("f32", "f16", "q8_0", "bf16",
// "q1_0", "q2_0"), or nullptr for a type without kernels.
const char *kernel_type_suffix(unsigned ggml_type);

// Program sources (defined in the kernels/*.cpp files).
extern const char *const kCommonPrelude;
extern const char *const kMatmulSource;
extern const char *const kLayerSource;
extern const char *const kMatmulTcSource;
extern const char *const kInt8InputSource;
extern const char *const kInt8MmaSource;
extern const char *const kGemvDp4aSource;
extern const char *const kMatmulMmqSource;
extern const char *const kPersistentSource;
extern const char *const kAttentionTcSource;
extern const char *const kDeltaNetSource;

// The tensor-core GEMM of a weight type ("bonsai_gemm_tc_q1_0"; the SwiGLU
// form "bonsai_gemm_swiglu_tc_..."), or "" when the type has none.
std::string tensor_core_gemm_name(unsigned ggml_type, bool swiglu);

// The int8 tensor-core prefill GEMM of a weight type ("bonsai_gemm_mmq_q1_0";
// the SwiGLU form "bonsai_gemm_swiglu_mmq_..."), or "" when the type has none.
std::string mmq_gemm_name(unsigned ggml_type, bool swiglu);

// The int8 (dp4a) decode GEMV of a weight type ("bonsai_gemv_dp4a_q1_0"; the
// SwiGLU form "bonsai_gemv_swiglu_dp4a_..."), or "" when the type has none.
std::string dp4a_gemv_name(unsigned ggml_type, bool swiglu);

// The persistent decode kernel for a weight type and KV cache element
// ("bonsai_decode_persistent_q1_0", "..._q1_0_f16"; with `held`, the
// held-records kernel: "bonsai_decode_persistent_held_q1_0"), or "" when
// the type has none.
std::string persistent_decode_name(unsigned ggml_type, bool kv_f16, bool held = false);

} // namespace bonsai::cuda
