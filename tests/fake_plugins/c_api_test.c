/* C API test (C99): opens tiny-q1 with the given plugin, generates 24 greedy
 * tokens from the 8 golden prompt ids, streams the text, and compares the ids
 * with the golden file's "greedy" list.
 * Usage: test_host_c_api MODEL.gguf PLUGIN.so GREEDY.json */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bonsai/bonsai.h"

enum { MAX_IDS = 64 };

/* Reads the integers of the JSON array that follows "key": in `text`. */
static int read_ids(const char *text, const char *key, int32_t *ids, int max_ids) {
  const char *at = strstr(text, key);
  if (at == NULL)
    return -1;
  at = strchr(at, '[');
  if (at == NULL)
    return -1;
  ++at;
  int n = 0;
  while (*at != ']' && *at != '\0' && n < max_ids) {
    char *end = NULL;
    long value = strtol(at, &end, 10);
    if (end == at) {
      ++at;
      continue;
    }
    ids[n++] = (int32_t)value;
    at = end;
  }
  return n;
}

static char *read_file(const char *path) {
  FILE *file = fopen(path, "rb");
  if (file == NULL)
    return NULL;
  char *buffer = calloc(1, 65536);
  if (buffer != NULL)
    (void)fread(buffer, 1, 65535, file);
  fclose(file);
  return buffer;
}

typedef struct stream_state {
  size_t pieces;
  size_t bytes;
} stream_state;

static int on_text(void *user_data, const char *piece, size_t length) {
  stream_state *state = (stream_state *)user_data;
  (void)piece;
  state->pieces += 1;
  state->bytes += length;
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL.gguf PLUGIN.so GREEDY.json\n", argv[0]);
    return 2;
  }
  char *json = read_file(argv[3]);
  if (json == NULL) {
    fprintf(stderr, "cannot read %s\n", argv[3]);
    return 1;
  }
  int32_t prompt[MAX_IDS];
  int32_t expected[MAX_IDS];
  const int n_prompt = read_ids(json, "\"prompt\"", prompt, MAX_IDS);
  const int n_expected = read_ids(json, "\"greedy\"", expected, MAX_IDS);
  free(json);
  if (n_prompt != 8 || n_expected != 24) {
    fprintf(stderr, "unexpected golden file: %d prompt ids, %d greedy ids\n", n_prompt, n_expected);
    return 1;
  }

  /* A failing open must leave a message naming the file. */
  bonsai_engine_options options = bonsai_engine_options_default();
  options.backend = argv[2];
  options.n_ctx = 64;
  if (bonsai_engine_open("/nonexistent/model.gguf", &options) != NULL ||
      strstr(bonsai_last_error(), "/nonexistent/model.gguf") == NULL) {
    fprintf(stderr, "opening a missing file: expected an error naming it, got '%s'\n",
            bonsai_last_error());
    return 1;
  }

  bonsai_engine *engine = bonsai_engine_open(argv[1], &options);
  if (engine == NULL) {
    fprintf(stderr, "bonsai_engine_open: %s\n", bonsai_last_error());
    return 1;
  }
  bonsai_session *session = bonsai_session_create(engine);
  if (session == NULL) {
    fprintf(stderr, "bonsai_session_create: %s\n", bonsai_last_error());
    bonsai_engine_close(engine);
    return 1;
  }
  /* The session keeps the model alive on its own. */
  bonsai_engine_close(engine);

  bonsai_generate_params params = bonsai_generate_params_default();
  params.prompt_tokens = prompt;
  params.n_prompt_tokens = (size_t)n_prompt;
  params.n_predict = n_expected;
  params.temperature = 0.0f;
  const char *no_stop[1] = {NULL};
  params.stop_strings = no_stop;
  params.n_stop_strings = 0;

  stream_state state = {0, 0};
  bonsai_generate_result result;
  int failures = 0;
  /* Stop tokens are the model's defaults; the golden run has none in it. */
  if (bonsai_generate(session, &params, on_text, &state, &result) != 0) {
    fprintf(stderr, "bonsai_generate: %s\n", bonsai_last_error());
    bonsai_session_destroy(session);
    return 1;
  }
  if (result.n_tokens != (size_t)n_expected) {
    fprintf(stderr, "generated %zu tokens, expected %d\n", result.n_tokens, n_expected);
    ++failures;
  }
  for (size_t i = 0; i < result.n_tokens && i < (size_t)n_expected; ++i)
    if (result.tokens[i] != expected[i]) {
      fprintf(stderr, "token %zu: got %d, expected %d\n", i, result.tokens[i], expected[i]);
      ++failures;
    }
  if (result.stop_reason != BONSAI_STOP_LENGTH) {
    fprintf(stderr, "stop reason %d, expected length\n", (int)result.stop_reason);
    ++failures;
  }
  if (state.bytes != strlen(result.text)) {
    fprintf(stderr, "streamed %zu bytes but the result text has %zu\n", state.bytes,
            strlen(result.text));
    ++failures;
  }
  if (result.prompt_tokens != n_prompt || result.gen_tokens != n_expected) {
    fprintf(stderr, "stats: %d prompt / %d generated tokens\n", result.prompt_tokens,
            result.gen_tokens);
    ++failures;
  }
  bonsai_generate_result_free(&result);
  bonsai_session_destroy(session);
  if (failures == 0)
    printf("C API: 24 greedy tokens match the golden reference\n");
  return failures == 0 ? 0 : 1;
}
