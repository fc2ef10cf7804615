/* Group 3 of the ABI: y = W x for n_tokens input rows. The one kernel a
 * plugin must have; with bind_model UNSUPPORTED the host runs every layer and
 * the LM head through it. */
#include <stdlib.h>

#include "context.h"
#include "formats.h"
#include "plugin.h"

/* Room for one dequantized row; the context is used by one thread at a time,
 * so one scratch buffer per context is enough. */
static float *row_buffer(bonsai_context *ctx, int64_t cols) {
  if (ctx->row_buffer_cols < cols) {
    float *bigger = realloc(ctx->row_buffer, (size_t)cols * sizeof(float));
    if (bigger == NULL)
      return NULL;
    ctx->row_buffer = bigger;
    ctx->row_buffer_cols = cols;
  }
  return ctx->row_buffer;
}

/* Sums in double keep the result far inside the exact-path tolerance. Four
 * independent partial sums let the CPU overlap the additions instead of
 * waiting for each one (a 3-4x speed-up over a single running sum). */
static float dot(const float *a, const float *b, int64_t n) {
  double sum[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k)
      sum[k] += (double)a[i + k] * (double)b[i + k];
  for (; i < n; ++i)
    sum[0] += (double)a[i] * (double)b[i];
  return (float)((sum[0] + sum[1]) + (sum[2] + sum[3]));
}

bonsai_status example_matmul(bonsai_context *ctx, const bonsai_matmul_desc *desc) {
  if (ctx == NULL)
    return BONSAI_ERR_INVALID_ARGUMENT;
  if (desc == NULL || desc->struct_size < SIZE_THROUGH(bonsai_matmul_desc, y))
    return context_fail(ctx, BONSAI_ERR_INVALID_ARGUMENT,
                        "matmul: the description is NULL or its struct_size is too small");
  const struct bonsai_weight *w = context_find_weight(ctx, desc->weight);
  if (w == NULL)
    return context_fail(ctx, BONSAI_ERR_INVALID_ARGUMENT,
                        "matmul: the weight handle does not belong to this context");
  if (desc->n_tokens < 1 || desc->n_tokens > ctx->max_batch)
    return context_fail(ctx, BONSAI_ERR_INVALID_ARGUMENT,
                        "matmul: n_tokens %d is outside 1..max_batch (%d)", desc->n_tokens,
                        ctx->max_batch);
  if (desc->x == NULL || desc->y == NULL)
    return context_fail(ctx, BONSAI_ERR_INVALID_ARGUMENT, "matmul: x or y is NULL");
  float *row = row_buffer(ctx, w->cols);
  if (row == NULL)
    return context_fail(ctx, BONSAI_ERR_OUT_OF_MEMORY, "matmul: out of memory");

  /* Row by row: expand the row once, then dot it with every token. */
  for (int64_t r = 0; r < w->rows; ++r) {
    format_dequantize_row(w->type, w->data + (size_t)r * w->row_bytes, w->cols, row);
    for (int32_t t = 0; t < desc->n_tokens; ++t) {
      const float *x = desc->x + (size_t)t * (size_t)w->cols;
      desc->y[(size_t)t * (size_t)w->rows + (size_t)r] = dot(row, x, w->cols);
    }
  }
  return BONSAI_OK;
}
