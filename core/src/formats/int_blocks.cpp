// Bit layouts of the quantized block types (formats.hpp), decoded to and
// encoded from integers times an f16 scale.
#include "int_blocks.hpp"

#include <cstring>

namespace bonsai::detail {
namespace {

uint16_t load_u16(const uint8_t *p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store_u16(uint8_t *p, uint16_t v) {
  std::memcpy(p, &v, sizeof v);
}

// 2-bit codes, element e at byte e / 4, bits 2 * (e % 4) (Q2_0, PQ2_0, Q2_0_G64).
void decode_codes_linear(const uint8_t *codes, int n, int8_t *k) {
  for (int e = 0; e < n; ++e)
    k[e] = static_cast<int8_t>(((codes[e / 4] >> (2 * (e % 4))) & 3) - 1);
}
void encode_codes_linear(const int8_t *k, int n, uint8_t *codes) {
  std::memset(codes, 0, static_cast<size_t>(n / 4));
  for (int e = 0; e < n; ++e)
    codes[e / 4] = static_cast<uint8_t>(codes[e / 4] | ((k[e] + 1) << (2 * (e % 4))));
}

// TQ2_0: element e at byte 32 * (e / 128) + e % 32, bits 2 * ((e % 128) / 32).
int tq2_byte(int e) {
  return 32 * (e / 128) + e % 32;
}
int tq2_shift(int e) {
  return 2 * ((e % 128) / 32);
}

// Base-3 packing (PTQ1_0, TQ1_0): a first run of g1 bytes and a second of
// g2 bytes hold five digits each, then g3 bytes hold four. Element e of
// run r sits in byte e % g_r of that run, digit e / g_r.
struct Base3Runs {
  int g1, g2, g3;
  int elements() const { return 5 * g1 + 5 * g2 + 4 * g3; }
  int bytes() const { return g1 + g2 + g3; }
  // The byte index (within the packed bytes) and digit of element e.
  void locate(int e, int &byte, int &digit) const {
    if (e < 5 * g1) {
      byte = e % g1;
      digit = e / g1;
    } else if (e < 5 * (g1 + g2)) {
      const int i = e - 5 * g1;
      byte = g1 + i % g2;
      digit = i / g2;
    } else {
      const int i = e - 5 * (g1 + g2);
      byte = g1 + g2 + i % g3;
      digit = i / g3;
    }
  }
};
constexpr Base3Runs kPtq1Runs{16, 8, 2};
constexpr Base3Runs kTq1Runs{32, 16, 4};

void decode_base3(const Base3Runs &runs, const uint8_t *bytes, int8_t *k) {
  for (int e = 0; e < runs.elements(); ++e) {
    int byte = 0, digit = 0;
    runs.locate(e, byte, digit);
    k[e] = static_cast<int8_t>(base3_digit(bytes[byte], digit) - 1);
  }
}

// The inverse of base3_digit: digits d0..d4 (d0 most significant) form
// v = sum d_n 3^(4-n) < 243, stored as ceil(v * 256 / 243) so that
// multiplying by 3^n brings digit n to the top of the byte.
void encode_base3(const Base3Runs &runs, const int8_t *k, uint8_t *bytes) {
  uint8_t digits[64][5] = {};
  for (int e = 0; e < runs.elements(); ++e) {
    int byte = 0, digit = 0;
    runs.locate(e, byte, digit);
    digits[byte][digit] = static_cast<uint8_t>(k[e] + 1);
  }
  for (int b = 0; b < runs.bytes(); ++b) {
    int v = 0;
    for (int n = 0; n < 5; ++n)
      v = 3 * v + digits[b][n];
    bytes[b] = static_cast<uint8_t>((v * 256 + 242) / 243);
  }
}

// First element of k outside [lo, hi], or -1.
int first_outside(const int8_t *k, int n, int lo, int hi) {
  for (int e = 0; e < n; ++e)
    if (k[e] < lo || k[e] > hi)
      return e;
  return -1;
}

} // namespace

bool has_int_view(GgmlType type) {
  switch (type) {
  case GgmlType::F32:
  case GgmlType::F16:
  case GgmlType::BF16:
    return false;
  default:
    return type_traits(static_cast<uint32_t>(type)).has_value();
  }
}

void decode_block(GgmlType type, const uint8_t *block, int8_t *k, uint16_t *d) {
  switch (type) {
  case GgmlType::Q1_0:
    *d = load_u16(block);
    for (int e = 0; e < kQ1BlockSize; ++e)
      k[e] = ((block[2 + e / 8] >> (e % 8)) & 1) ? 1 : -1;
    return;
  case GgmlType::Q2_0:
  case GgmlType::PQ2_0:
    *d = load_u16(block);
    decode_codes_linear(block + 2, kQ2BlockSize, k);
    return;
  case GgmlType::Q2_0_G64:
    *d = load_u16(block);
    decode_codes_linear(block + 2, kQ2G64BlockSize, k);
    return;
  case GgmlType::Q4_0:
    *d = load_u16(block);
    for (int e = 0; e < kQ4BlockSize / 2; ++e) {
      k[e] = static_cast<int8_t>((block[2 + e] & 15) - 8);
      k[e + kQ4BlockSize / 2] = static_cast<int8_t>((block[2 + e] >> 4) - 8);
    }
    return;
  case GgmlType::Q8_0:
    *d = load_u16(block);
    std::memcpy(k, block + 2, kQ8BlockSize);
    return;
  case GgmlType::PTQ1_0:
    decode_base3(kPtq1Runs, block, k);
    *d = load_u16(block + offsetof(BlockPTQ1_0, d));
    return;
  case GgmlType::TQ1_0:
    decode_base3(kTq1Runs, block, k);
    *d = load_u16(block + offsetof(BlockTQ1_0, d));
    return;
  case GgmlType::TQ2_0:
    for (int e = 0; e < kTqBlockSize; ++e)
      k[e] = static_cast<int8_t>(((block[tq2_byte(e)] >> tq2_shift(e)) & 3) - 1);
    *d = load_u16(block + offsetof(BlockTQ2_0, d));
    return;
  case GgmlType::F32:
  case GgmlType::F16:
  case GgmlType::BF16:
    break;
  }
}

bool encode_block(GgmlType type, const int8_t *k, uint16_t d, uint8_t *block, int *bad) {
  const int n = static_cast<int>(traits_of(type).block_elements);
  // What each type can store: 2-bit codes reach +2 (code 3, which ggml
  // reads as +2d), base-3 digits only +1, Q1_0 only the two signs.
  int lo = -1, hi = 2;
  if (type == GgmlType::PTQ1_0 || type == GgmlType::TQ1_0)
    hi = 1;
  else if (type == GgmlType::Q4_0)
    lo = -8, hi = 7;
  else if (type == GgmlType::Q8_0)
    lo = -127, hi = 127;
  else if (type == GgmlType::Q1_0)
    lo = -1, hi = 1;
  int e = first_outside(k, n, lo, hi);
  if (e < 0 && type == GgmlType::Q1_0)
    for (int i = 0; i < n && e < 0; ++i)
      if (k[i] == 0)
        e = i;
  if (e >= 0) {
    *bad = e;
    return false;
  }
  switch (type) {
  case GgmlType::Q1_0:
    store_u16(block, d);
    std::memset(block + 2, 0, kQ1BlockSize / 8);
    for (int i = 0; i < n; ++i)
      if (k[i] > 0)
        block[2 + i / 8] = static_cast<uint8_t>(block[2 + i / 8] | (1u << (i % 8)));
    return true;
  case GgmlType::Q2_0:
  case GgmlType::PQ2_0:
  case GgmlType::Q2_0_G64:
    store_u16(block, d);
    encode_codes_linear(k, n, block + 2);
    return true;
  case GgmlType::Q4_0:
    store_u16(block, d);
    for (int i = 0; i < kQ4BlockSize / 2; ++i)
      block[2 + i] = static_cast<uint8_t>((k[i] + 8) | ((k[i + kQ4BlockSize / 2] + 8) << 4));
    return true;
  case GgmlType::Q8_0:
    store_u16(block, d);
    std::memcpy(block + 2, k, kQ8BlockSize);
    return true;
  case GgmlType::PTQ1_0:
    encode_base3(kPtq1Runs, k, block);
    store_u16(block + offsetof(BlockPTQ1_0, d), d);
    return true;
  case GgmlType::TQ1_0:
    encode_base3(kTq1Runs, k, block);
    store_u16(block + offsetof(BlockTQ1_0, d), d);
    return true;
  case GgmlType::TQ2_0:
    std::memset(block, 0, sizeof(BlockTQ2_0::qs));
    for (int i = 0; i < n; ++i)
      block[tq2_byte(i)] = static_cast<uint8_t>(block[tq2_byte(i)] | ((k[i] + 1) << tq2_shift(i)));
    store_u16(block + offsetof(BlockTQ2_0, d), d);
    return true;
  case GgmlType::F32:
  case GgmlType::F16:
  case GgmlType::BF16:
    break;
  }
  *bad = 0;
  return false;
}

} // namespace bonsai::detail
