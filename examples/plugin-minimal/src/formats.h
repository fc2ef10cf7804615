/* Weight formats the example understands, as GGUF stores them (ggml type ids).
 * Rows are contiguous; a quantized row is a sequence of 128-weight blocks. */
#ifndef EXAMPLE_FORMATS_H
#define EXAMPLE_FORMATS_H

#include <stddef.h>
#include <stdint.h>

enum {
  TYPE_F32 = 0,   /* 4-byte IEEE floats */
  TYPE_F16 = 1,   /* 2-byte IEEE half floats */
  TYPE_Q1_0 = 41, /* 1-bit: f16 scale d + 16 bytes of signs per 128 weights */
  TYPE_Q2_0 = 42  /* ternary: f16 scale d + 32 bytes of 2-bit codes per 128 weights */
};

/* Non-zero when this plugin can multiply weights of `type`. */
int format_is_supported(uint32_t type);

/* Bytes of one row of `cols` weights, or 0 when `cols` is not valid for the
 * type (not positive, or not a whole number of 128-weight blocks). */
size_t format_row_bytes(uint32_t type, int64_t cols);

/* Expands one stored row into `cols` floats. The type must be supported and
 * `row` must hold format_row_bytes(type, cols) bytes. */
void format_dequantize_row(uint32_t type, const uint8_t *row, int64_t cols, float *out);

#endif
