#pragma once
// Every quantized block type as "integers times one f16 scale": a block of
// n elements decodes to k[0..n) and d, the value of element e being k[e] * d.
// That one view lets dequantize, quantize and the exact conversions between
// encodings share the per-type bit layouts, which live only here.
#include <cstddef>
#include <cstdint>

#include "bonsai/core/formats.hpp"

namespace bonsai::detail {

// Types with an integer view: Q1_0 (k = +-1), Q4_0 (-8..7), Q8_0
// (-127..127) and the ternary types (k = code - 1: -1..2).
bool has_int_view(GgmlType type);

// Decodes one block: block_elements values of k and the raw f16 scale.
void decode_block(GgmlType type, const uint8_t *block, int8_t *k, uint16_t *d);

// Encodes one block from k and an f16 scale. Returns false, writing
// nothing meaningful, when some k is outside what the type stores (e.g. 0
// in Q1_0, 2 in a base-3 ternary type, anything outside -1..2 for the
// ternary types); `bad` then receives the first offending element.
bool encode_block(GgmlType type, const int8_t *k, uint16_t d, uint8_t *block, int *bad);

// The base-3 digit n (0..4) of a packed byte, as ggml defines it.
inline int base3_digit(uint8_t byte, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const uint8_t shifted = static_cast<uint8_t>(byte * kPow3[n]);
  return (shifted * 3) >> 8;
}

} // namespace bonsai::detail
