/* C API test (C99): opens a tiny golden model (tiny-q1, tiny-q35-q1) with the
 * given plugin, generates 24 greedy tokens from the 8 golden prompt ids, streams the text, and
 * compares the ids with the golden file's "greedy" list. Then the rest of the API: log
 * probabilities, detokenize, chat messages with a system prompt (against
 * ChatML written out by hand), the log callback, stop strings, a callback
 * that cancels, and a caller built before the appended fields.
 * Usage: test_host_c_api MODEL.gguf PLUGIN.so GREEDY.json */
#include <math.h>
#include <stddef.h>
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

typedef struct log_state {
  int lines;
  int template_warnings; /* "no chat template" lines */
} log_state;

static void on_log(void *user_data, int level, const char *message) {
  log_state *state = (log_state *)user_data;
  state->lines += 1;
  if (level == 3 && strstr(message, "no chat template") != NULL)
    state->template_warnings += 1;
}

static int stop_after_first(void *user_data, const char *piece, size_t length) {
  (void)piece;
  (void)length;
  *(int *)user_data += 1;
  return 0; /* cancel */
}

/* Checks the API beyond the greedy run; returns the number of failures. */
static int check_more(bonsai_session *session, const int32_t *prompt, int n_prompt,
                      bonsai_engine *engine);

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
  failures += check_more(session, prompt, n_prompt, engine);
  /* The session keeps the model alive on its own. */
  bonsai_engine_close(engine);
  bonsai_session_reset(session);
  if (bonsai_generate(session, &params, NULL, NULL, NULL) != 0) {
    fprintf(stderr, "generate after the engine was closed: %s\n", bonsai_last_error());
    ++failures;
  }
  bonsai_session_destroy(session);
  if (failures == 0)
    printf("C API: 24 greedy tokens match the golden reference; logprobs, drafts, detokenize, "
           "chat messages, log callback, stop strings and cancel pass\n");
  return failures == 0 ? 0 : 1;
}

static int check_more(bonsai_session *session, const int32_t *prompt, int n_prompt,
                      bonsai_engine *engine) {
  int failures = 0;
  bonsai_generate_params params = bonsai_generate_params_default();
  params.prompt_tokens = prompt;
  params.n_prompt_tokens = (size_t)n_prompt;
  params.n_predict = 6;
  params.temperature = 0.0f;
  bonsai_generate_result result;

  /* Log probabilities: one per generated token, each a log of a probability;
   * the greedy pick is the most likely token, so never below log(1/vocab). */
  params.logprobs = 1;
  if (bonsai_generate(session, &params, NULL, NULL, &result) != 0) {
    fprintf(stderr, "generate with logprobs: %s\n", bonsai_last_error());
    return failures + 1;
  }
  float logprobs[16];
  const int32_t n_logprobs = bonsai_session_logprobs(session, logprobs, 16);
  if (n_logprobs != (int32_t)result.n_tokens || n_logprobs != 6) {
    fprintf(stderr, "%d log probabilities for %zu tokens\n", n_logprobs, result.n_tokens);
    ++failures;
  }
  for (int32_t i = 0; i < n_logprobs && i < 16; ++i)
    if (!(logprobs[i] <= 0.0f && logprobs[i] >= -7.63f)) { /* log(1/2048) = -7.62 */
      fprintf(stderr, "logprob %d is %f\n", i, logprobs[i]);
      ++failures;
    }
  bonsai_generate_result_free(&result);

  /* A caller built before the appended fields: its smaller struct_size gets
   * the defaults (no log probabilities), and the call still works. */
  bonsai_generate_params old = params;
  old.struct_size = (uint32_t)offsetof(bonsai_generate_params, messages);
  old.logprobs = 1; /* beyond its struct: must not be read */
  if (bonsai_generate(session, &old, NULL, NULL, &result) != 0 ||
      bonsai_session_logprobs(session, logprobs, 16) != 0) {
    fprintf(stderr, "an older caller's params: %s\n", bonsai_last_error());
    ++failures;
  }
  bonsai_generate_result_free(&result);
  params.logprobs = 0;

  /* Speculative decoding with a draft model that always agrees (a second
   * session of the same model) and prompt lookup: the greedy reply and its
   * log probabilities are the plain ones, and the draft proposed. */
  bonsai_session *draft_model = bonsai_session_create(engine);
  bonsai_generate_result plain_result, drafted_result;
  bonsai_generate_params drafted = params;
  drafted.n_predict = 16;
  drafted.logprobs = 1;
  bonsai_generate_params plain = drafted;
  drafted.draft_ngram = 1;
  drafted.draft_session = draft_model;
  drafted.draft_p_min = 0.0f;
  float plain_logprobs[16], drafted_logprobs[16];
  int32_t n_drafted = -1, n_accepted = -1;
  if (bonsai_generate(session, &plain, NULL, NULL, &plain_result) != 0 ||
      bonsai_session_logprobs(session, plain_logprobs, 16) != 16 ||
      bonsai_session_draft_counts(session, &n_drafted, &n_accepted) != 0 || n_drafted != 0 ||
      bonsai_generate(session, &drafted, NULL, NULL, &drafted_result) != 0 ||
      bonsai_session_logprobs(session, drafted_logprobs, 16) != 16 ||
      strcmp(plain_result.text, drafted_result.text) != 0) {
    fprintf(stderr, "a drafted reply differs: %s\n", bonsai_last_error());
    ++failures;
  }
  for (int i = 0; i < 16; ++i)
    if (fabsf(plain_logprobs[i] - drafted_logprobs[i]) > 1e-5f) {
      fprintf(stderr, "drafted logprob %d is %f, plain %f\n", i, drafted_logprobs[i],
              plain_logprobs[i]);
      ++failures;
    }
  if (bonsai_session_draft_counts(session, &n_drafted, &n_accepted) != 0 || n_drafted <= 0 ||
      n_accepted < 0 || n_accepted > n_drafted ||
      bonsai_session_draft_counts(NULL, NULL, NULL) != -1) {
    fprintf(stderr, "draft counts %d proposed, %d kept\n", n_drafted, n_accepted);
    ++failures;
  }
  bonsai_generate_result_free(&plain_result);
  bonsai_generate_result_free(&drafted_result);
  bonsai_session_destroy(draft_model);
  drafted.draft_session = session; /* a session cannot draft for itself */
  if (bonsai_generate(session, &drafted, NULL, NULL, NULL) != -1 ||
      strstr(bonsai_last_error(), "draft_session") == NULL) {
    fprintf(stderr, "a self-draft was accepted: %s\n", bonsai_last_error());
    ++failures;
  }

  /* The MTP draft (draft_mtp): on a qwen35 model with an MTP layer the greedy
   * reply is the plain one and proposals were made; a model without one
   * fails the call, and the message says why. */
  bonsai_generate_params mtp = params;
  mtp.n_predict = 12;
  bonsai_generate_params mtp_plain = mtp;
  mtp.draft_mtp = 1;
  mtp.draft_p_min = 0.0f;
  if (bonsai_engine_mtp_layers(engine) > 0) {
    bonsai_generate_result mtp_result;
    memset(&mtp_result, 0, sizeof mtp_result);
    if (bonsai_generate(session, &mtp_plain, NULL, NULL, &plain_result) != 0 ||
        bonsai_generate(session, &mtp, NULL, NULL, &mtp_result) != 0 ||
        strcmp(plain_result.text, mtp_result.text) != 0 ||
        bonsai_session_draft_counts(session, &n_drafted, &n_accepted) != 0 || n_drafted <= 0) {
      fprintf(stderr, "an MTP-drafted reply differs or proposed nothing: %s\n",
              bonsai_last_error());
      ++failures;
    }
    bonsai_generate_result_free(&mtp_result);
    bonsai_generate_result_free(&plain_result);
  } else if (bonsai_generate(session, &mtp, NULL, NULL, NULL) != -1 ||
             strstr(bonsai_last_error(), "MTP layer") == NULL) {
    fprintf(stderr, "draft_mtp on a model without an MTP layer: '%s'\n", bonsai_last_error());
    ++failures;
  }
  if (bonsai_engine_mtp_layers(NULL) != 0) {
    fprintf(stderr, "bonsai_engine_mtp_layers(NULL) is not 0\n");
    ++failures;
  }

  /* A JSON reply: an enum of two words, so the text is one of them, quoted;
   * a schema with an unsupported keyword fails with its name. */
  bonsai_generate_params json = params;
  json.json_reply = 1;
  json.json_schema = "{\"enum\": [\"yes\", \"no\"]}";
  json.n_predict = 8;
  if (bonsai_generate(session, &json, NULL, NULL, &result) != 0 ||
      (strcmp(result.text, "\"yes\"") != 0 && strcmp(result.text, "\"no\"") != 0)) {
    fprintf(stderr, "json reply: '%s' (%s)\n", result.text ? result.text : "", bonsai_last_error());
    ++failures;
  }
  bonsai_generate_result_free(&result);
  json.json_schema = "{\"type\": \"integer\", \"not\": {\"const\": 3}}";
  if (bonsai_generate(session, &json, NULL, NULL, &result) != -1 ||
      strstr(bonsai_last_error(), "the keyword 'not' is not supported") == NULL) {
    fprintf(stderr, "an unsupported keyword: '%s'\n", bonsai_last_error());
    ++failures;
  }
  bonsai_generate_result_free(&result);

  /* Detokenize undoes tokenize; a short buffer gets a cut, terminated text. */
  const char *text = "Hello world, 1234!";
  int32_t ids[32];
  const int32_t n_ids = bonsai_tokenize(engine, text, ids, 32);
  char back[64];
  if (n_ids <= 0 ||
      bonsai_detokenize(engine, ids, (size_t)n_ids, back, sizeof back) != (int32_t)strlen(text) ||
      strcmp(back, text) != 0) {
    fprintf(stderr, "detokenize(tokenize('%s')) = '%s'\n", text, back);
    ++failures;
  }
  char small[6];
  if (bonsai_detokenize(engine, ids, (size_t)n_ids, small, sizeof small) != (int32_t)strlen(text) ||
      strcmp(small, "Hello") != 0) {
    fprintf(stderr, "a 6-byte buffer got '%s'\n", small);
    ++failures;
  }
  const int32_t bad_id = 1 << 30;
  if (bonsai_detokenize(engine, &bad_id, 1, back, sizeof back) != -1) {
    fprintf(stderr, "an id outside the vocabulary was detokenized\n");
    ++failures;
  }

  /* Chat messages with a system turn: the model has no template, so the
   * host formats ChatML (and warns through the log callback). */
  log_state logs = {0, 0};
  bonsai_set_log_callback(on_log, &logs);
  const char *chatml = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi"
                       "<|im_end|>\n<|im_start|>assistant\n";
  const int32_t chatml_tokens = bonsai_tokenize(engine, chatml, ids, 32);
  const bonsai_chat_message messages[2] = {{"system", "Be brief."}, {"user", "Hi"}};
  bonsai_generate_params chat = bonsai_generate_params_default();
  chat.messages = messages;
  chat.n_messages = 2;
  chat.n_predict = 2;
  chat.temperature = 0.0f;
  bonsai_session_reset(session); /* nothing reused: prompt_tokens counts all */
  if (bonsai_generate(session, &chat, NULL, NULL, &result) != 0) {
    fprintf(stderr, "chat messages: %s\n", bonsai_last_error());
    ++failures;
  }
  const int32_t evaluated = result.prompt_tokens;
  bonsai_generate_result_free(&result);
  bonsai_session_reset(session);
  /* The same turns as prompt + system_prompt + chat. */
  bonsai_generate_params wrapped = chat;
  wrapped.messages = NULL;
  wrapped.n_messages = 0;
  wrapped.prompt = "Hi";
  wrapped.chat = 1;
  wrapped.system_prompt = "Be brief.";
  if (bonsai_generate(session, &wrapped, NULL, NULL, &result) != 0 ||
      result.prompt_tokens != chatml_tokens || evaluated != chatml_tokens) {
    fprintf(stderr, "chat prompts of %d and %d tokens; hand-written ChatML has %d\n", evaluated,
            result.prompt_tokens, chatml_tokens);
    ++failures;
  }
  bonsai_generate_result_free(&result);
  bonsai_set_log_callback(NULL, NULL);
  if (logs.template_warnings < 1) {
    fprintf(stderr, "the log callback got %d lines, no chat-template warning\n", logs.lines);
    ++failures;
  }
  /* The header allows system, user and assistant turns only. */
  const bonsai_chat_message odd[1] = {{"wizard", "Hi"}};
  bonsai_generate_params odd_chat = chat;
  odd_chat.messages = odd;
  odd_chat.n_messages = 1;
  if (bonsai_generate(session, &odd_chat, NULL, NULL, NULL) != -1 ||
      strstr(bonsai_last_error(), "messages[0].role is 'wizard'") == NULL) {
    fprintf(stderr, "a 'wizard' turn: %s\n", bonsai_last_error());
    ++failures;
  }
  if (bonsai_set_log_level("loud") != -1 || bonsai_set_log_level("warn") != 0) {
    fprintf(stderr, "bonsai_set_log_level accepted a bad name or refused a good one\n");
    ++failures;
  }

  /* A stop string ends the text before it; a callback returning 0 cancels. */
  params.n_predict = 24;
  if (bonsai_generate(session, &params, NULL, NULL, &result) != 0 || strlen(result.text) < 4) {
    fprintf(stderr, "greedy text: %s\n", bonsai_last_error());
    return failures + 1;
  }
  /* top_p >= 1 and min_p <= 0 are "off" as the header says: sampled with
   * them, a seeded reply is the one with the filters off by their defaults. */
  bonsai_generate_params off = params;
  off.temperature = 0.9f;
  off.top_k = 0;
  off.has_seed = 1;
  off.seed = 7;
  off.top_p = 1.0f;
  off.min_p = 0.0f;
  bonsai_generate_result off_result, beyond_result;
  bonsai_generate_params beyond = off;
  beyond.top_p = 1.5f;
  beyond.min_p = -3.0f;
  if (bonsai_generate(session, &off, NULL, NULL, &off_result) != 0 ||
      bonsai_generate(session, &beyond, NULL, NULL, &beyond_result) != 0 ||
      strcmp(off_result.text, beyond_result.text) != 0) {
    fprintf(stderr, "top_p 1.5 and min_p -3: %s\n", bonsai_last_error());
    ++failures;
  }
  bonsai_generate_result_free(&off_result);
  bonsai_generate_result_free(&beyond_result);
  char stop[4];
  const size_t cut = strlen(result.text) / 2;
  memcpy(stop, result.text + cut, 3);
  stop[3] = '\0';
  char *expected = strdup(result.text);
  expected[strstr(result.text, stop) - result.text] = '\0';
  bonsai_generate_result_free(&result);
  const char *stops[1] = {stop};
  params.stop_strings = stops;
  params.n_stop_strings = 1;
  if (bonsai_generate(session, &params, NULL, NULL, &result) != 0 ||
      result.stop_reason != BONSAI_STOP_STRING || strcmp(result.text, expected) != 0) {
    fprintf(stderr, "stop string '%s': got '%s', expected '%s'\n", stop, result.text, expected);
    ++failures;
  }
  free(expected);
  bonsai_generate_result_free(&result);
  params.n_stop_strings = 0;
  int calls = 0;
  if (bonsai_generate(session, &params, stop_after_first, &calls, &result) != 0 ||
      result.stop_reason != BONSAI_STOP_CANCELLED || calls != 1) {
    fprintf(stderr, "a callback returning 0: stop reason %d after %d calls\n",
            (int)result.stop_reason, calls);
    ++failures;
  }
  bonsai_generate_result_free(&result);
  return failures;
}
