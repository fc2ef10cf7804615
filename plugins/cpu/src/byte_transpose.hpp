#pragma once
// A 16 x 16 byte transpose and a nibble pack on SSE2, for rewriting weights
// into tiles at load (q1_tiles.cpp).
#if defined(__SSE2__)
#include <cstdint>
#include <emmintrin.h>

namespace bonsai::cpu {

// by_byte[k] = byte k of each of the 16 inputs (16 bytes at rows16[j]), input
// j at position j: four rounds of interleaving by 1, 2, 4 and 8 bytes leave
// byte k of every input in x[bit-reversed k].
inline void transpose_16x16(const uint8_t *const rows16[16], __m128i by_byte[16]) {
  __m128i x[16];
  for (int j = 0; j < 16; ++j)
    x[j] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(rows16[j]));
  for (int round = 0; round < 4; ++round) {
    __m128i y[16];
    for (int i = 0; i < 8; ++i) {
      const __m128i a = x[2 * i], b = x[2 * i + 1];
      switch (round) {
      case 0:
        y[i] = _mm_unpacklo_epi8(a, b), y[i + 8] = _mm_unpackhi_epi8(a, b);
        break;
      case 1:
        y[i] = _mm_unpacklo_epi16(a, b), y[i + 8] = _mm_unpackhi_epi16(a, b);
        break;
      case 2:
        y[i] = _mm_unpacklo_epi32(a, b), y[i + 8] = _mm_unpackhi_epi32(a, b);
        break;
      default:
        y[i] = _mm_unpacklo_epi64(a, b), y[i + 8] = _mm_unpackhi_epi64(a, b);
      }
    }
    for (int i = 0; i < 16; ++i)
      x[i] = y[i];
  }
  for (int k = 0; k < 16; ++k) {
    const int reversed = ((k & 1) << 3) | ((k & 2) << 1) | ((k & 4) >> 1) | ((k & 8) >> 3);
    by_byte[k] = x[reversed];
  }
}

// Per 16-bit word m (row 2m's byte low, row 2m + 1's high), the low nibbles
// of both bytes as one byte, row 2m's in bits 0-3: the 8 bytes from `first`,
// then the 8 from `second`. The bytes' high nibbles are ignored.
inline __m128i pack_row_nibbles(__m128i first, __m128i second) {
  const __m128i low4 = _mm_set1_epi16(0x000f), high4 = _mm_set1_epi16(0x00f0);
  const auto pack = [&](__m128i w) {
    return _mm_or_si128(_mm_and_si128(w, low4), _mm_and_si128(_mm_srli_epi16(w, 4), high4));
  };
  return _mm_packus_epi16(pack(first), pack(second));
}

} // namespace bonsai::cpu
#endif
