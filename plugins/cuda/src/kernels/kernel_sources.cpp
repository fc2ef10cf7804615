#include "kernel_sources.hpp"

namespace bonsai::cuda {
namespace {

const char *const kTypeSuffixes[] = {"f32", "f16", "bf16", "q8_0", "q1_0", "q2_0"};

std::vector<std::string> matmul_entry_points() {
  std::vector<std::string> names;
  for (const char *suffix : kTypeSuffixes)
    for (const char *kind : {"bonsai_gemv_", "bonsai_gemm_", "bonsai_gemv_swiglu_",
                             "bonsai_gemm_swiglu_", "bonsai_get_rows_"})
      names.push_back(std::string(kind) + suffix);
  return names;
}

// Types with tensor-core GEMMs (128-value blocks whose weights are exact in
// f16 and in int8) and with int8 decode GEMVs (the planar layouts): Q1_0,
// Q2_0.
const unsigned kTensorCoreTypes[] = {41, 42};
const unsigned kDp4aTypes[] = {41, 42};

// The name of a kernel family for `ggml_type`, or "" when `types` lacks it.
template <size_t N>
std::string family_name(const unsigned (&types)[N], unsigned ggml_type, const char *plain,
                        const char *swiglu_form, bool swiglu) {
  for (unsigned type : types)
    if (type == ggml_type)
      return std::string(swiglu ? swiglu_form : plain) + kernel_type_suffix(ggml_type);
  return {};
}

// The plain and SwiGLU kernels `name` gives for each of `types`.
template <size_t N>
std::vector<std::string> entry_points(const unsigned (&types)[N],
                                      std::string (*name)(unsigned, bool)) {
  std::vector<std::string> names;
  for (unsigned type : types)
    for (bool swiglu : {false, true})
      names.push_back(name(type, swiglu));
  return names;
}

// The int8 GEMVs and the launch that quantizes their input once per token.
std::vector<std::string> dp4a_entry_points() {
  std::vector<std::string> names = entry_points(kDp4aTypes, dp4a_gemv_name);
  names.push_back("bonsai_quantize_input");
  return names;
}

// The int8 tensor-core GEMMs and the launch that quantizes their input rows.
std::vector<std::string> mmq_entry_points() {
  std::vector<std::string> names = entry_points(kTensorCoreTypes, mmq_gemm_name);
  names.push_back("bonsai_quantize_rows");
  return names;
}

// The persistent decode kernels: per planar type, f32 and f16 KV caches;
// `held`: the held-records ones (persistent_records=registers).
std::vector<std::string> persistent_entry_points(bool held) {
  std::vector<std::string> names;
  for (unsigned type : kDp4aTypes)
    for (bool kv_f16 : {false, true})
      names.push_back(persistent_decode_name(type, kv_f16, held));
  return names;
}

std::string persistent_source() {
  return std::string(kCommonPrelude) + kInt8InputSource + kGemvDp4aSource + kInt8MmaSource +
         kPersistentSource;
}

std::vector<KernelProgram> build_programs() {
  return {
      {"bonsai_matmul.cu", std::string(kCommonPrelude) + kMatmulSource, matmul_entry_points(), 0},
      // The layer kernels of qwen3 and qwen35 (gated attention's gate, the
      // gated DeltaNet's): one program, so a context compiles no more for
      // either architecture.
      {"bonsai_layer.cu",
       std::string(kCommonPrelude) + kLayerSource + kDeltaNetSource,
       {"bonsai_rmsnorm", "bonsai_qk_norm_rope", "bonsai_attention_split",
        "bonsai_attention_split_warps", "bonsai_qk_norm_rope_f16", "bonsai_attention_split_f16",
        "bonsai_attention_split_warps_f16", "bonsai_attention_split_warps_wide",
        "bonsai_attention_split_warps_wide_f16", "bonsai_attention_merge", "bonsai_sigmoid_gate",
        "bonsai_argmax", "bonsai_delta_net_conv", "bonsai_delta_net_prepare", "bonsai_delta_rule",
        "bonsai_delta_net_gated_norm"},
       0},
      {"bonsai_matmul_tc.cu", std::string(kCommonPrelude) + kMatmulTcSource,
       entry_points(kTensorCoreTypes, tensor_core_gemm_name), 7, ProgramFeature::tensor_cores},
      // dp4a needs compute capability 6.1; NVRTC 13 starts at 7.5 anyway.
      {"bonsai_gemv_dp4a.cu", std::string(kCommonPrelude) + kInt8InputSource + kGemvDp4aSource,
       dp4a_entry_points(), 6, ProgramFeature::int8_gemv},
      // mma.sync.m16n8k32 on int8 and cp.async need compute capability 8.0.
      {"bonsai_matmul_mmq.cu",
       std::string(kCommonPrelude) + kInt8InputSource + kInt8MmaSource + kMatmulMmqSource,
       mmq_entry_points(), 8, ProgramFeature::int8_mma},
      // ld.acquire, nanosleep and globaltimer waits need compute capability 7.0.
      {"bonsai_decode_persistent.cu", persistent_source(), persistent_entry_points(false), 7,
       ProgramFeature::persistent},
      {"bonsai_decode_persistent_held.cu", "#define BONSAI_PK_HELD_RECORDS\n" + persistent_source(),
       persistent_entry_points(true), 7, ProgramFeature::persistent_held},
      // mma.sync.m16n8k16 with f32 sums needs compute capability 8.0.
      {"bonsai_attention_tc.cu",
       std::string(kCommonPrelude) + kAttentionTcSource,
       {"bonsai_attention_tc", "bonsai_attention_tc_f16"},
       8,
       ProgramFeature::attention_tc},
  };
}

} // namespace

const std::vector<KernelProgram> &kernel_programs() {
  static const std::vector<KernelProgram> programs = build_programs();
  return programs;
}

std::string tensor_core_gemm_name(unsigned ggml_type, bool swiglu) {
  return family_name(kTensorCoreTypes, ggml_type, "bonsai_gemm_tc_", "bonsai_gemm_swiglu_tc_",
                     swiglu);
}

std::string mmq_gemm_name(unsigned ggml_type, bool swiglu) {
  return family_name(kTensorCoreTypes, ggml_type, "bonsai_gemm_mmq_", "bonsai_gemm_swiglu_mmq_",
                     swiglu);
}

std::string dp4a_gemv_name(unsigned ggml_type, bool swiglu) {
  return family_name(kDp4aTypes, ggml_type, "bonsai_gemv_dp4a_", "bonsai_gemv_swiglu_dp4a_",
                     swiglu);
}

std::string persistent_decode_name(unsigned ggml_type, bool kv_f16, bool held) {
  std::string name =
      family_name(kDp4aTypes, ggml_type,
                  held ? "bonsai_decode_persistent_held_" : "bonsai_decode_persistent_", "", false);
  return name.empty() || !kv_f16 ? name : name + "_f16";
}

const char *kernel_type_suffix(unsigned ggml_type) {
  switch (ggml_type) {
  case 0:
    return "f32";
  case 1:
    return "f16";
  case 8:
    return "q8_0";
  case 30:
    return "bf16";
  case 41:
    return "q1_0";
  case 42:
    return "q2_0";
  default:
    return nullptr;
  }
}

} // namespace bonsai::cuda
