/*
 * bonsai C API (C99): a thin layer over the C++ Engine/Session API of
 * libbonsai_host for use from C and other languages.
 *
 * Error handling: functions that can fail return NULL or a negative value and
 * store a message retrievable with bonsai_last_error() on the calling thread.
 *
 * Ownership: handles are created by *_open / *_create and released by the
 * matching *_close / *_destroy. Strings passed in are borrowed for the call.
 * A session keeps its engine's model loaded, so an engine may be closed
 * before its sessions.
 *
 * Threading: an engine may be used from several threads; a session from one
 * thread at a time, except bonsai_session_cancel(), callable from any thread.
 */
#ifndef BONSAI_H
#define BONSAI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define BONSAI_API
#else
#define BONSAI_API __attribute__((visibility("default")))
#endif

typedef struct bonsai_engine bonsai_engine;
typedef struct bonsai_session bonsai_session;

/* Options of bonsai_engine_open(). Initialize with
 * bonsai_engine_options_default(), then change fields. */
typedef struct bonsai_engine_options {
  uint32_t struct_size;       /* sizeof(bonsai_engine_options) of the caller */
  const char *backend;        /* "auto", a name ("cpu"), a .so path or a comma list */
  int32_t n_threads;          /* 0 = plugin's choice */
  int32_t n_ctx;              /* context window; 0 = model's training context */
  int32_t n_batch;            /* most tokens per step */
  const char *plugin_options; /* "key=value;..." or NULL */
  /* RoPE overrides (llama.cpp's --rope-scaling, --rope-scale, --rope-freq-base,
   * --yarn-orig-ctx); NULL / 0 keep the file's settings. Appended later: a
   * caller built before them passes a smaller struct_size and gets the file's. */
  const char *rope_scaling; /* "none", "linear", "yarn" or NULL */
  float rope_scale;         /* context factor >= 1 (alone: linear); 0 = the file's */
  float rope_freq_base;     /* > 0; 0 = the file's */
  int32_t yarn_orig_ctx;    /* > 0; 0 = the file's */
} bonsai_engine_options;

BONSAI_API bonsai_engine_options bonsai_engine_options_default(void);

/* Opens a GGUF model. NULL on failure (see bonsai_last_error()). */
BONSAI_API bonsai_engine *bonsai_engine_open(const char *model_path,
                                             const bonsai_engine_options *options);
/* Releases the engine; NULL is a no-op. */
BONSAI_API void bonsai_engine_close(bonsai_engine *engine);
/* The selected backend's name ("cpu"); valid while the engine is open. */
BONSAI_API const char *bonsai_engine_backend_name(const bonsai_engine *engine);
/* The model's multi-token-prediction layers (qwen35; what draft_mtp drafts
 * with); 0 for a model without (and for NULL). */
BONSAI_API int32_t bonsai_engine_mtp_layers(const bonsai_engine *engine);

/* A new session (own KV cache). NULL on failure. */
BONSAI_API bonsai_session *bonsai_session_create(bonsai_engine *engine);
/* Releases the session; NULL is a no-op. */
BONSAI_API void bonsai_session_destroy(bonsai_session *session);
/* Asks a running bonsai_generate() on this session to stop. Any thread. */
BONSAI_API void bonsai_session_cancel(bonsai_session *session);
/* Empties the session's KV cache. */
BONSAI_API void bonsai_session_reset(bonsai_session *session);

/* Why generation stopped. */
typedef enum bonsai_stop_reason {
  BONSAI_STOP_LENGTH = 0,
  BONSAI_STOP_TOKEN = 1,
  BONSAI_STOP_STRING = 2,
  BONSAI_STOP_CANCELLED = 3,
  BONSAI_STOP_CONTEXT_FULL = 4
} bonsai_stop_reason;

/* Receives each piece of generated text (complete UTF-8, not NUL-terminated,
 * borrowed for the call). Return non-zero to continue, 0 to stop. */
typedef int (*bonsai_text_fn)(void *user_data, const char *piece, size_t length);

/* One chat turn. */
typedef struct bonsai_chat_message {
  const char *role;    /* "system", "user" or "assistant" */
  const char *content; /* NUL-terminated UTF-8 */
} bonsai_chat_message;

/* Parameters of bonsai_generate(). Initialize with
 * bonsai_generate_params_default(). */
typedef struct bonsai_generate_params {
  uint32_t struct_size;         /* sizeof(bonsai_generate_params) of the caller */
  const char *prompt;           /* prompt text (used when n_prompt_tokens == 0) */
  const int32_t *prompt_tokens; /* or prompt token ids */
  size_t n_prompt_tokens;
  int32_t chat;                    /* non-zero: wrap `prompt` in the chat template */
  int32_t n_predict;               /* max tokens; -1 = until stop or context full */
  float temperature;               /* <= 0: greedy */
  int32_t top_k;                   /* <= 0: off */
  float top_p;                     /* >= 1: off */
  float min_p;                     /* <= 0: off */
  float repeat_penalty;            /* 1: off */
  uint64_t seed;                   /* used when has_seed != 0 */
  int32_t has_seed;                /* 0: random seed */
  const char *const *stop_strings; /* n_stop_strings strings */
  size_t n_stop_strings;
  /* Appended later: a caller built before them passes a smaller struct_size
   * and gets the defaults (no messages, no system prompt, thinking on, no
   * log probabilities). */
  const bonsai_chat_message *messages; /* the conversation (used when non-empty, before
                                          `prompt`), formatted with the chat template */
  size_t n_messages;
  const char *system_prompt; /* with `chat` and `prompt`: a system turn first (NULL: none) */
  int32_t enable_thinking;   /* chat: 0 pre-fills an empty <think></think> block */
  int32_t logprobs;          /* non-zero: keep log probabilities (bonsai_session_logprobs) */
  /* Appended with constrained decoding (docs/structured-output.md); a caller
   * built before them gets plain text. A schema bonsai cannot enforce fails
   * the call, and bonsai_last_error() names the keyword. */
  int32_t json_reply;      /* non-zero: the reply is JSON, valid under json_schema */
  const char *json_schema; /* with json_reply: a JSON Schema, as JSON text; NULL: any object */
  /* Appended with speculative decoding (docs/speculative.md); a caller built
   * before them gets no draft. The reply is the model's own either way. */
  bonsai_session *draft_session; /* a session of a draft model with the same vocabulary
                                    (its cache is taken over); NULL: none */
  int32_t draft_ngram;           /* > 0: also propose by prompt lookup of the last N tokens */
  int32_t draft_max;             /* most tokens proposed per step (default 16) */
  int32_t draft_min;             /* fewer proposals than this: a plain step (default 1) */
  float draft_p_min;             /* the draft model stops below this probability (default 0.75) */
  /* Appended with the MTP draft; a caller built before it gets none. */
  int32_t draft_mtp; /* non-zero: propose with the model's own MTP layer (qwen35; not with
                        draft_session); a model without one fails the call */
} bonsai_generate_params;

BONSAI_API bonsai_generate_params bonsai_generate_params_default(void);

/* Result of bonsai_generate(). `text` and `tokens` are owned by the result:
 * release them with bonsai_generate_result_free(). */
typedef struct bonsai_generate_result {
  char *text;      /* NUL-terminated generated text */
  int32_t *tokens; /* generated ids */
  size_t n_tokens;
  bonsai_stop_reason stop_reason;
  double load_ms;
  int32_t prompt_tokens;
  double prompt_ms;
  double prompt_tps;
  int32_t gen_tokens; /* tokens sampled, a stop token included */
  double gen_ms;
  double gen_tps; /* decode steps per second (N tokens are N - 1 steps: the
                     first comes from the prompt's logits), as llama.cpp counts */
} bonsai_generate_result;

/* Generates; streams through on_text (may be NULL). Returns 0 on success and
 * fills *result (may be NULL if not wanted); -1 on failure. The session starts
 * over for each call, reusing the longest cached prefix. */
BONSAI_API int bonsai_generate(bonsai_session *session, const bonsai_generate_params *params,
                               bonsai_text_fn on_text, void *user_data,
                               bonsai_generate_result *result);
/* Frees what a result owns and zeroes it; NULL is a no-op. */
BONSAI_API void bonsai_generate_result_free(bonsai_generate_result *result);

/* Tokenizes `text` into `out` (capacity `max_tokens`). Returns the number of
 * tokens (which may exceed max_tokens: then only the first max_tokens were
 * written), or -1 on failure. */
BONSAI_API int32_t bonsai_tokenize(const bonsai_engine *engine, const char *text, int32_t *out,
                                   int32_t max_tokens);

/* The log probabilities of the last bonsai_generate() on this session that
 * set params.logprobs: for each generated token (result.tokens), its natural
 * log probability under the distribution it was drawn from (the logits after
 * the repeat penalty and a JSON format's mask, divided by the temperature, 1
 * when greedy; before top-k, top-p and min-p). Copies up to
 * `capacity` values into `out` and returns how many there are (0 when the last
 * call did not ask for them), or -1 for a NULL session. */
BONSAI_API int32_t bonsai_session_logprobs(const bonsai_session *session, float *out,
                                           size_t capacity);

/* What the draft did in the last bonsai_generate() on this session (0 and 0
 * without a draft, or after a failed call): `drafted` proposals were
 * verified and `accepted` of them kept (docs/speculative.md). Either pointer
 * may be NULL. Returns 0, or -1 for a NULL session. */
BONSAI_API int bonsai_session_draft_counts(const bonsai_session *session, int32_t *drafted,
                                           int32_t *accepted);

/* Writes the text of `tokens` into `out` (capacity `capacity` bytes, NUL
 * included). Returns the text's length in bytes without the NUL (which may
 * exceed capacity - 1: then the text was cut, still NUL-terminated), or -1 on
 * failure (an id outside the vocabulary). Ids that form an incomplete UTF-8
 * character come back as raw bytes. */
BONSAI_API int32_t bonsai_detokenize(const bonsai_engine *engine, const int32_t *tokens,
                                     size_t n_tokens, char *out, size_t capacity);

/* Log lines of the library and its plugins: `level` is 0 trace, 1 debug,
 * 2 info, 3 warn, 4 error; `message` is borrowed for the call. */
typedef void (*bonsai_log_callback)(void *user_data, int level, const char *message);
/* Sends log lines to `callback` instead of stderr (NULL restores stderr).
 * Called from whichever thread logs, possibly from several at once. The
 * callback may call bonsai_set_log_callback, but nothing that logs (it would
 * recurse). */
BONSAI_API void bonsai_set_log_callback(bonsai_log_callback callback, void *user_data);
/* The least severe level logged: "trace", "debug", "info", "warn" (default),
 * "error" or "off". Returns 0, or -1 for an unknown name. */
BONSAI_API int bonsai_set_log_level(const char *level);

/* The last error message of the calling thread ("" if none). Valid until the
 * next failing call on this thread. */
BONSAI_API const char *bonsai_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BONSAI_H */
