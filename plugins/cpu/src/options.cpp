#include "options.hpp"

#include <string_view>

#include "plugin_error.hpp"

namespace bonsai::cpu {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos)
    return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

KernelChoice parse_kernels(std::string_view value, const char *source) {
  if (value == "auto" || value == "fast")
    return KernelChoice::Auto;
  if (value == "reference")
    return KernelChoice::Reference;
  if (value == "avx2")
    return KernelChoice::Avx2;
  if (value == "avx512")
    return KernelChoice::Avx512;
  if (value == "avxvnni")
    return KernelChoice::AvxVnni;
  if (value == "neon")
    return KernelChoice::Neon;
  if (value == "dotprod")
    return KernelChoice::DotProd;
  if (value == "i8mm")
    return KernelChoice::I8mm;
  fail_invalid(strformat("%s: unknown kernel set '%.*s' (expected auto, reference, avx2, avxvnni, "
                         "avx512, neon, dotprod or i8mm)",
                         source, static_cast<int>(value.size()), value.data()));
}

KvChoice parse_kv(std::string_view value) {
  if (value == "f32")
    return KvChoice::F32;
  if (value == "f16")
    return KvChoice::F16;
  fail_invalid(strformat("option kv: unknown KV cache type '%.*s' (expected f32 or f16)",
                         static_cast<int>(value.size()), value.data()));
}

} // namespace

const char *kv_choice_name(KvChoice choice) {
  switch (choice) {
  case KvChoice::F32:
    return "f32";
  case KvChoice::F16:
    return "f16";
  }
  return "f32";
}

const char *kernel_choice_name(KernelChoice choice) {
  switch (choice) {
  case KernelChoice::Auto:
    return "auto";
  case KernelChoice::Reference:
    return "reference";
  case KernelChoice::Avx2:
    return "avx2";
  case KernelChoice::Avx512:
    return "avx512";
  case KernelChoice::AvxVnni:
    return "avxvnni";
  case KernelChoice::Neon:
    return "neon";
  case KernelChoice::DotProd:
    return "dotprod";
  case KernelChoice::I8mm:
    return "i8mm";
  }
  return "auto";
}

ContextOptions parse_options(const char *options, const char *env_kernels) {
  ContextOptions out;
  bool kernels_given = false;
  std::string_view rest = options ? std::string_view(options) : std::string_view();
  while (!rest.empty()) {
    const auto semi = rest.find(';');
    const std::string_view entry = trim(rest.substr(0, semi));
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    if (entry.empty())
      continue;
    const auto eq = entry.find('=');
    if (eq == std::string_view::npos) {
      out.warnings.push_back("option '" + std::string(entry) + "' has no '=value'; ignored");
      continue;
    }
    const std::string_view key = trim(entry.substr(0, eq));
    const std::string_view value = trim(entry.substr(eq + 1));
    if (key == "kernels") {
      out.kernels = parse_kernels(value, "option kernels");
      out.kernels_source = "options";
      kernels_given = true;
    } else if (key == "kv") {
      out.kv = parse_kv(value);
    } else {
      out.warnings.push_back("unknown option '" + std::string(key) + "'; ignored");
    }
  }
  if (!kernels_given && env_kernels != nullptr && *env_kernels != '\0') {
    out.kernels = parse_kernels(trim(env_kernels), "BONSAI_CPU_KERNELS");
    out.kernels_source = "BONSAI_CPU_KERNELS";
  }
  return out;
}

} // namespace bonsai::cpu
