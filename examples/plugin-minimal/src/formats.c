#include "formats.h"

#include <math.h>
#include <string.h>

enum { BLOCK = 128 };                      /* weights per quantized block */
enum { Q1_0_BLOCK_BYTES = 2 + BLOCK / 8 }; /* f16 d + one bit per weight */
enum { Q2_0_BLOCK_BYTES = 2 + BLOCK / 4 }; /* f16 d + two bits per weight */

/* GGUF is little-endian; reading byte by byte works on any host. */
static uint16_t read_u16(const uint8_t *p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}

/* IEEE half to float, written out so the plugin needs no F16C or _Float16. */
static float f16_to_f32(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = ldexpf((float)mantissa, -24); /* zero and subnormals */
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = ldexpf((float)(mantissa | 0x400), exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

int format_is_supported(uint32_t type) {
  return type == TYPE_F32 || type == TYPE_F16 || type == TYPE_Q1_0 || type == TYPE_Q2_0;
}

size_t format_row_bytes(uint32_t type, int64_t cols) {
  if (cols <= 0)
    return 0;
  switch (type) {
  case TYPE_F32:
    return (size_t)cols * 4;
  case TYPE_F16:
    return (size_t)cols * 2;
  case TYPE_Q1_0:
    return cols % BLOCK ? 0 : (size_t)(cols / BLOCK) * Q1_0_BLOCK_BYTES;
  case TYPE_Q2_0:
    return cols % BLOCK ? 0 : (size_t)(cols / BLOCK) * Q2_0_BLOCK_BYTES;
  default:
    return 0;
  }
}

/* Q1_0: bit j of the block (LSB first) set means +d, clear means -d. */
static void dequantize_q1_0(const uint8_t *row, int64_t cols, float *out) {
  for (int64_t b = 0; b < cols / BLOCK; ++b) {
    const uint8_t *block = row + b * Q1_0_BLOCK_BYTES;
    const float d = f16_to_f32(read_u16(block));
    const uint8_t *bits = block + 2;
    for (int j = 0; j < BLOCK; ++j)
      out[b * BLOCK + j] = (bits[j / 8] >> (j % 8)) & 1 ? d : -d;
  }
}

/* Q2_0: code j of the block (2 bits, LSB first) stands for (code - 1) * d. */
static void dequantize_q2_0(const uint8_t *row, int64_t cols, float *out) {
  for (int64_t b = 0; b < cols / BLOCK; ++b) {
    const uint8_t *block = row + b * Q2_0_BLOCK_BYTES;
    const float d = f16_to_f32(read_u16(block));
    const uint8_t *codes = block + 2;
    for (int j = 0; j < BLOCK; ++j) {
      const int code = (codes[j / 4] >> (2 * (j % 4))) & 3;
      out[b * BLOCK + j] = (float)(code - 1) * d;
    }
  }
}

void format_dequantize_row(uint32_t type, const uint8_t *row, int64_t cols, float *out) {
  switch (type) {
  case TYPE_F32:
    memcpy(out, row, (size_t)cols * sizeof(float)); /* little-endian hosts only */
    break;
  case TYPE_F16:
    for (int64_t c = 0; c < cols; ++c)
      out[c] = f16_to_f32(read_u16(row + 2 * c));
    break;
  case TYPE_Q1_0:
    dequantize_q1_0(row, cols, out);
    break;
  case TYPE_Q2_0:
    dequantize_q2_0(row, cols, out);
    break;
  default:
    break; /* callers check format_is_supported first */
  }
}
