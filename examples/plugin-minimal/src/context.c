#include "context.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

bonsai_status context_fail(bonsai_context *ctx, bonsai_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(ctx->last_error, sizeof(ctx->last_error), format, args);
  va_end(args);
  return status;
}

void context_log(const bonsai_context *ctx, bonsai_log_level level, const char *format, ...) {
  if (ctx->log == NULL || level < ctx->log_level)
    return;
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  ctx->log(ctx->log_user_data, level, message); /* borrowed for the call only */
}

bonsai_context *context_create(const bonsai_context_desc *desc) {
  bonsai_context *ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL)
    return NULL;
  ctx->max_batch = desc->max_batch;
  ctx->log = desc->log;
  ctx->log_user_data = desc->log_user_data;
  ctx->log_level = desc->log_level;
  return ctx;
}

void context_destroy(bonsai_context *ctx) {
  struct bonsai_weight *w = ctx->weights;
  while (w != NULL) {
    struct bonsai_weight *next = w->next;
    free(w->owned);
    free(w);
    w = next;
  }
  free(ctx->row_buffer);
  free(ctx);
}

struct bonsai_weight *context_find_weight(const bonsai_context *ctx, const bonsai_weight *handle) {
  for (struct bonsai_weight *w = ctx->weights; w != NULL; w = w->next)
    if (w == handle)
      return w;
  return NULL;
}
