#pragma once
// Shared by the bonsai plugins: the one exception type a plugin throws
// internally (its ABI entry points turn it into a bonsai_status plus the
// context's last_error), printf-style formatting and ABI struct reading.
#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bonsai/bonsai_backend.h"

namespace bonsai::plugin {

class PluginError : public std::runtime_error {
public:
  PluginError(bonsai_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  bonsai_status status() const { return status_; }

private:
  bonsai_status status_;
};

// printf-style formatting into a std::string (the plugin links no fmt).
__attribute__((format(printf, 1, 2))) inline std::string strformat(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int needed = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out;
  if (needed > 0) {
    out.resize(static_cast<size_t>(needed) + 1);
    std::vsnprintf(out.data(), out.size(), fmt, args);
    out.resize(static_cast<size_t>(needed));
  }
  va_end(args);
  return out;
}

[[noreturn]] inline void fail(bonsai_status status, const std::string &message) {
  throw PluginError(status, message);
}
[[noreturn]] inline void fail_invalid(const std::string &message) {
  fail(BONSAI_ERR_INVALID_ARGUMENT, message);
}
[[noreturn]] inline void fail_state(const std::string &message) {
  fail(BONSAI_ERR_BAD_STATE, message);
}

// Copies an ABI argument struct after checking the pointer and struct_size.
// Bytes past the caller's struct_size are never read; in ABI 1.0 every field
// is required, so a struct smaller than ours is rejected.
template <class T> T read_abi_struct(const T *p, const char *what, size_t min_size = sizeof(T)) {
  if (p == nullptr)
    fail_invalid(strformat("%s is NULL", what));
  if (p->struct_size < min_size)
    fail_invalid(strformat("%s.struct_size is %u, smaller than the %zu bytes it needs (ABI %d.%d)",
                           what, p->struct_size, min_size, BONSAI_ABI_MAJOR, BONSAI_ABI_MINOR));
  // An older host's struct is shorter: copy what it wrote, the rest reads as
  // zero. A newer host's is longer: its extra fields are not ours to read.
  T out{};
  std::memcpy(static_cast<void *>(&out), p, std::min<size_t>(p->struct_size, sizeof(T)));
  return out;
}

// ABI 1.0's bonsai_model_desc ended with `layers`; 1.1 appended the RoPE rates
// (rope_rates.hpp reads them).
inline constexpr size_t kModelDescV10Size = offsetof(bonsai_model_desc, rope_inv_freq);

// The sizes ABI 1.2 gave its layered-model structs: a reader accepts any
// struct at least this long (a later minor version's is longer), never one
// shorter, whatever sizeof() says in the header it was built with.
inline constexpr size_t kLayeredModelDescV12Size =
    offsetof(bonsai_layered_model_desc, layers) + sizeof(void *);
inline constexpr size_t kLayerDescV12Size = offsetof(bonsai_layer_desc, w_down) + sizeof(void *);
inline constexpr size_t kGatedAttentionMixerV12Size =
    offsetof(bonsai_gated_attention_mixer, wo) + sizeof(void *);
inline constexpr size_t kGatedDeltaNetMixerV12Size =
    offsetof(bonsai_gated_delta_net_mixer, out) + sizeof(void *);

} // namespace bonsai::plugin
