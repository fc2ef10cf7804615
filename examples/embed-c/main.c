/* Embedding bonsai from C: route the library's log lines, open a model,
 * stream one completion through a callback, answer a chat turn with a system
 * message and read its log probabilities, then cancel a generation from
 * another thread.
 *
 *   embed-c MODEL.gguf [BACKEND]     BACKEND: "auto" (default), "cpu", or a plugin .so path */
#include <bonsai/bonsai.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* The library's log lines (and its plugins'), here to stderr with a tag. */
static void log_line(void *user_data, int level, const char *message) {
  static const char *const levels[] = {"trace", "debug", "info", "warn", "error"};
  (void)user_data;
  fprintf(stderr, "[bonsai %s] %s\n", levels[level >= 0 && level <= 4 ? level : 4], message);
}

static int print_piece(void *user_data, const char *piece, size_t length) {
  (void)user_data;
  fwrite(piece, 1, length, stdout); /* not NUL-terminated */
  fflush(stdout);
  return 1; /* non-zero: continue */
}

static void print_stats(const bonsai_generate_result *r) {
  static const char *const reasons[] = {"length", "stop token", "stop string", "cancelled",
                                        "context full"};
  printf("\n[stop: %s] prompt %d tokens in %.1f ms (%.1f t/s), generated %d tokens in %.1f ms "
         "(%.1f t/s)\n",
         reasons[r->stop_reason], r->prompt_tokens, r->prompt_ms, r->prompt_tps, r->gen_tokens,
         r->gen_ms, r->gen_tps);
}

/* Shared by the generating thread's callback and the cancelling thread. */
typedef struct cancel_state {
  pthread_mutex_t mutex;
  pthread_cond_t started;
  int first_piece;
  bonsai_session *session;
} cancel_state;

static int signal_first_piece(void *user_data, const char *piece, size_t length) {
  cancel_state *state = user_data;
  (void)piece;
  (void)length;
  pthread_mutex_lock(&state->mutex);
  state->first_piece = 1;
  pthread_cond_signal(&state->started);
  pthread_mutex_unlock(&state->mutex);
  return 1;
}

static void *cancel_when_started(void *arg) {
  cancel_state *state = arg;
  pthread_mutex_lock(&state->mutex);
  while (!state->first_piece)
    pthread_cond_wait(&state->started, &state->mutex);
  pthread_mutex_unlock(&state->mutex);
  bonsai_session_cancel(state->session); /* callable from any thread */
  return NULL;
}

static int stream_completion(bonsai_engine *engine) {
  bonsai_session *session = bonsai_session_create(engine);
  if (session == NULL)
    return -1;
  bonsai_generate_params params = bonsai_generate_params_default();
  params.prompt = "The quick brown fox";
  params.n_predict = 24;
  params.temperature = 0.0f; /* greedy */
  bonsai_generate_result result;
  printf("%s", params.prompt);
  const int status = bonsai_generate(session, &params, print_piece, NULL, &result);
  if (status == 0) {
    print_stats(&result);
    bonsai_generate_result_free(&result);
  }
  bonsai_session_destroy(session);
  return status;
}

/* A chat turn after a system message, thinking off; prints the reply's
 * tokens as text again (detokenize) and their mean log probability. */
static int chat_turn(bonsai_engine *engine) {
  bonsai_session *session = bonsai_session_create(engine);
  if (session == NULL)
    return -1;
  const bonsai_chat_message messages[] = {{"system", "You answer in one short sentence."},
                                          {"user", "What is a bonsai?"}};
  bonsai_generate_params params = bonsai_generate_params_default();
  params.messages = messages;
  params.n_messages = 2;
  params.enable_thinking = 0;
  params.n_predict = 16;
  params.temperature = 0.0f;
  params.logprobs = 1;
  bonsai_generate_result result;
  int status = bonsai_generate(session, &params, NULL, NULL, &result);
  if (status == 0) {
    float logprobs[16];
    const int32_t n = bonsai_session_logprobs(session, logprobs, 16);
    double sum = 0.0;
    for (int32_t i = 0; i < n && i < 16; ++i)
      sum += logprobs[i];
    const int32_t length = bonsai_detokenize(engine, result.tokens, result.n_tokens, NULL, 0);
    char *text = length >= 0 ? malloc((size_t)length + 1) : NULL;
    if (text != NULL && bonsai_detokenize(engine, result.tokens, result.n_tokens, text,
                                          (size_t)length + 1) == length)
      printf("[chat] %zu tokens, mean logprob %.3f, %d bytes of text\n", result.n_tokens,
             n > 0 ? sum / n : 0.0, length);
    else
      status = -1;
    free(text);
    bonsai_generate_result_free(&result);
  }
  bonsai_session_destroy(session);
  return status;
}

/* Returns 0 when the generation stopped as cancelled. */
static int cancel_from_another_thread(bonsai_engine *engine) {
  cancel_state state = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL};
  state.session = bonsai_session_create(engine);
  if (state.session == NULL)
    return -1;
  pthread_t canceller;
  pthread_create(&canceller, NULL, cancel_when_started, &state);

  bonsai_generate_params params = bonsai_generate_params_default();
  params.prompt = "Count to one thousand:";
  params.n_predict = -1; /* until a stop token, the context's end, or cancel */
  params.temperature = 0.0f;
  bonsai_generate_result result;
  int status = bonsai_generate(state.session, &params, signal_first_piece, &state, &result);
  pthread_join(canceller, NULL);
  if (status == 0) {
    printf("second session: %zu tokens before the cancel took effect", result.n_tokens);
    print_stats(&result);
    status = result.stop_reason == BONSAI_STOP_CANCELLED ? 0 : -1;
    bonsai_generate_result_free(&result);
  }
  bonsai_session_destroy(state.session);
  return status;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.gguf [BACKEND]\n", argv[0]);
    return 2;
  }
  bonsai_set_log_callback(log_line, NULL);
  bonsai_engine_options options = bonsai_engine_options_default();
  options.backend = argc > 2 ? argv[2] : "auto";
  options.n_ctx = 512;
  bonsai_engine *engine = bonsai_engine_open(argv[1], &options);
  if (engine == NULL) {
    fprintf(stderr, "error: %s\n", bonsai_last_error());
    return 1;
  }
  printf("backend %s\n", bonsai_engine_backend_name(engine));
  int status = stream_completion(engine);
  if (status == 0)
    status = chat_turn(engine);
  if (status == 0)
    status = cancel_from_another_thread(engine);
  if (status != 0)
    fprintf(stderr, "error: %s\n",
            bonsai_last_error()[0] ? bonsai_last_error() : "the generation was not cancelled");
  bonsai_engine_close(engine); /* sessions are gone; closing releases the model */
  return status == 0 ? 0 : 1;
}
