#pragma once
// FNV-1a, 64 bit: the PTX cache's key and payload checksum. Not
// cryptographic; it only has to make accidental collisions unlikely.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace bonsai::cuda {

inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnvPrime = 0x100000001b3ull;

// Continues a hash over `bytes`; start with kFnvOffsetBasis.
inline uint64_t fnv1a64(std::string_view bytes, uint64_t hash = kFnvOffsetBasis) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= kFnvPrime;
  }
  return hash;
}

} // namespace bonsai::cuda
