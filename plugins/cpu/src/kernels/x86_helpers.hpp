#pragma once
// Small helpers shared by the x86 SIMD kernels. Everything here carries a
// target attribute: it may only run once CPUID said the features exist.
#include <cstdint>
#include <cstring>
#include <immintrin.h>

#define BONSAI_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define BONSAI_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma,f16c")))

namespace bonsai::cpu {

BONSAI_TARGET_AVX2 inline __m256i load256(const void *p) {
  return _mm256_loadu_si256(static_cast<const __m256i *>(p));
}

// The raw bits of a block's f16 scale (blocks are not aligned).
inline uint16_t load_u16(const uint8_t *p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return bits;
}

// The f16 scale at the start of a block (blocks are not aligned).
BONSAI_TARGET_AVX2 inline float load_f16(const uint8_t *p) {
  return _cvtsh_ss(load_u16(p));
}

BONSAI_TARGET_AVX2 inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

BONSAI_TARGET_AVX2 inline float hmax256(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

} // namespace bonsai::cpu
