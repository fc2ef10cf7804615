// The C API (bonsai.h): handles wrap the C++ objects; every entry point
// catches everything so no exception crosses into C.
#include "bonsai/bonsai.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "bonsai/engine.hpp"
#include "bonsai/log.hpp"

struct bonsai_engine {
  bonsai::Engine engine;
};

struct bonsai_session {
  bonsai::Session session;
  std::vector<float> logprobs; // of the last bonsai_generate that asked for them
  int32_t drafted = 0;         // proposals verified in the last bonsai_generate
  int32_t accepted = 0;        // and kept
};

namespace {

thread_local std::string last_error_text;

void set_error(const char *text) {
  last_error_text = text != nullptr ? text : "unknown error";
}

// Runs `body`, storing any exception's message; returns `failed` then.
template <typename Body, typename Result> Result guarded(Body &&body, Result failed) {
  try {
    return body();
  } catch (const std::exception &error) {
    set_error(error.what());
  } catch (...) {
    set_error("unknown error");
  }
  return failed;
}

bonsai_stop_reason to_c(bonsai::StopReason reason) {
  switch (reason) {
  case bonsai::StopReason::length:
    return BONSAI_STOP_LENGTH;
  case bonsai::StopReason::stop_token:
    return BONSAI_STOP_TOKEN;
  case bonsai::StopReason::stop_string:
    return BONSAI_STOP_STRING;
  case bonsai::StopReason::cancelled:
    return BONSAI_STOP_CANCELLED;
  case bonsai::StopReason::context_full:
    return BONSAI_STOP_CONTEXT_FULL;
  }
  return BONSAI_STOP_CANCELLED;
}

} // namespace

extern "C" {

bonsai_engine_options bonsai_engine_options_default(void) {
  const bonsai::EngineOptions defaults;
  bonsai_engine_options options{};
  options.struct_size = sizeof options;
  options.backend = "auto";
  options.n_threads = defaults.n_threads;
  options.n_ctx = defaults.n_ctx;
  options.n_batch = defaults.n_batch;
  options.plugin_options = nullptr;
  options.rope_scaling = nullptr;
  options.rope_scale = 0.0f;
  options.rope_freq_base = 0.0f;
  options.yarn_orig_ctx = 0;
  return options;
}

bonsai_engine *bonsai_engine_open(const char *model_path, const bonsai_engine_options *options) {
  return guarded(
      [&]() -> bonsai_engine * {
        if (model_path == nullptr)
          throw bonsai::InvalidArgument("bonsai_engine_open: model_path is NULL");
        bonsai_engine_options c_options = bonsai_engine_options_default();
        if (options != nullptr) {
          if (options->struct_size < sizeof(uint32_t) ||
              options->struct_size > sizeof(bonsai_engine_options) + 4096)
            throw bonsai::InvalidArgument(
                "bonsai_engine_open: options->struct_size is " +
                std::to_string(options->struct_size) +
                "; set it to sizeof(bonsai_engine_options) (bonsai_engine_options_default() does)");
          std::memcpy(&c_options, options,
                      std::min<size_t>(options->struct_size, sizeof c_options));
        }
        bonsai::EngineOptions cpp;
        if (c_options.backend != nullptr)
          cpp.backend = c_options.backend;
        cpp.n_threads = c_options.n_threads;
        cpp.n_ctx = c_options.n_ctx;
        cpp.n_batch = c_options.n_batch;
        if (c_options.plugin_options != nullptr)
          cpp.plugin_options = c_options.plugin_options;
        if (c_options.rope_scaling != nullptr)
          cpp.rope_scaling = c_options.rope_scaling;
        cpp.rope_scale = c_options.rope_scale;
        cpp.rope_freq_base = c_options.rope_freq_base;
        cpp.yarn_orig_ctx = c_options.yarn_orig_ctx;
        return new bonsai_engine{bonsai::Engine::open(model_path, cpp)};
      },
      static_cast<bonsai_engine *>(nullptr));
}

void bonsai_engine_close(bonsai_engine *engine) {
  delete engine;
}

const char *bonsai_engine_backend_name(const bonsai_engine *engine) {
  return engine != nullptr ? engine->engine.backend().name.c_str() : "";
}

int32_t bonsai_engine_mtp_layers(const bonsai_engine *engine) {
  return engine != nullptr ? engine->engine.model().n_mtp_layers : 0;
}

bonsai_session *bonsai_session_create(bonsai_engine *engine) {
  return guarded(
      [&]() -> bonsai_session * {
        if (engine == nullptr)
          throw bonsai::InvalidArgument("bonsai_session_create: engine is NULL");
        return new bonsai_session{engine->engine.create_session(), {}};
      },
      static_cast<bonsai_session *>(nullptr));
}

void bonsai_session_destroy(bonsai_session *session) {
  delete session;
}

void bonsai_session_cancel(bonsai_session *session) {
  if (session != nullptr)
    session->session.cancel();
}

void bonsai_session_reset(bonsai_session *session) {
  if (session != nullptr)
    guarded(
        [&] {
          session->session.reset();
          return 0;
        },
        -1);
}

bonsai_generate_params bonsai_generate_params_default(void) {
  const bonsai::SamplingParams sampling;
  bonsai_generate_params params{};
  params.struct_size = sizeof params;
  params.n_predict = bonsai::GenerateRequest{}.n_predict;
  params.temperature = sampling.temperature;
  params.top_k = sampling.top_k;
  params.top_p = sampling.top_p;
  params.min_p = sampling.min_p;
  params.repeat_penalty = sampling.repeat_penalty;
  params.enable_thinking = 1;
  const bonsai::DraftOptions draft;
  params.draft_max = draft.max;
  params.draft_min = draft.min;
  params.draft_p_min = draft.p_min;
  return params;
}

int bonsai_generate(bonsai_session *session, const bonsai_generate_params *params,
                    bonsai_text_fn on_text, void *user_data, bonsai_generate_result *result) {
  if (result != nullptr)
    *result = bonsai_generate_result{};
  if (session != nullptr) {
    session->logprobs.clear();
    session->drafted = session->accepted = 0;
  }
  return guarded(
      [&] {
        if (session == nullptr || params == nullptr)
          throw bonsai::InvalidArgument("bonsai_generate: session or params is NULL");
        bonsai_generate_params p = bonsai_generate_params_default();
        if (params->struct_size < sizeof(uint32_t) ||
            params->struct_size > sizeof(bonsai_generate_params) + 4096)
          throw bonsai::InvalidArgument(
              "bonsai_generate: params->struct_size is " + std::to_string(params->struct_size) +
              "; set it to sizeof(bonsai_generate_params) (bonsai_generate_params_default() "
              "does)");
        std::memcpy(&p, params, std::min<size_t>(params->struct_size, sizeof p));

        bonsai::GenerateRequest request;
        if (p.n_prompt_tokens > 0) {
          if (p.prompt_tokens == nullptr)
            throw bonsai::InvalidArgument("bonsai_generate: prompt_tokens is NULL");
          request.prompt_tokens.assign(p.prompt_tokens, p.prompt_tokens + p.n_prompt_tokens);
        } else if (p.prompt != nullptr) {
          request.prompt = p.prompt;
        }
        for (size_t i = 0; i < p.n_messages; ++i) {
          if (p.messages == nullptr || p.messages[i].role == nullptr ||
              p.messages[i].content == nullptr)
            throw bonsai::InvalidArgument(
                "bonsai_generate: messages[" + std::to_string(i) +
                "] (or the array) is NULL; every message needs a role and content");
          const std::string_view role = p.messages[i].role;
          if (role != "system" && role != "user" && role != "assistant")
            throw bonsai::InvalidArgument("bonsai_generate: messages[" + std::to_string(i) +
                                          "].role is '" + std::string(role.substr(0, 32)) +
                                          "'; expected system, user or assistant");
          request.messages.push_back({p.messages[i].role, p.messages[i].content});
        }
        if (p.system_prompt != nullptr)
          request.system_prompt = p.system_prompt;
        request.enable_thinking = p.enable_thinking != 0;
        // Only a caller that knows the field gets it written.
        const bool knows_logprobs =
            params->struct_size >= offsetof(bonsai_generate_params, logprobs) + sizeof p.logprobs;
        request.logprobs = knows_logprobs && p.logprobs != 0;
        request.chat = p.chat != 0;
        if (p.json_reply != 0) {
          request.format.kind = p.json_schema != nullptr ? bonsai::ReplyFormat::Kind::json_schema
                                                         : bonsai::ReplyFormat::Kind::json_object;
          if (p.json_schema != nullptr)
            request.format.schema = p.json_schema;
        }
        if (p.draft_session == session)
          throw bonsai::InvalidArgument("bonsai_generate: draft_session is the session itself");
        request.draft.model = p.draft_session != nullptr ? &p.draft_session->session : nullptr;
        request.draft.ngram = p.draft_ngram;
        request.draft.max = p.draft_max;
        request.draft.min = p.draft_min;
        request.draft.p_min = p.draft_p_min;
        request.draft.mtp = p.draft_mtp != 0;
        request.n_predict = p.n_predict;
        request.sampling.temperature = p.temperature;
        request.sampling.top_k = p.top_k;
        // The header's promise: top_p >= 1 and min_p <= 0 turn them off
        // (the C++ API takes [0, 1] only). NaN stays NaN and is refused.
        request.sampling.top_p = p.top_p > 1.0f ? 1.0f : p.top_p;
        request.sampling.min_p = p.min_p < 0.0f ? 0.0f : p.min_p;
        request.sampling.repeat_penalty = p.repeat_penalty;
        if (p.has_seed != 0)
          request.sampling.seed = p.seed;
        for (size_t i = 0; i < p.n_stop_strings; ++i)
          if (p.stop_strings != nullptr && p.stop_strings[i] != nullptr)
            request.stop_strings.emplace_back(p.stop_strings[i]);

        bonsai::TextCallback callback;
        if (on_text != nullptr)
          callback = [&](std::string_view piece) {
            return on_text(user_data, piece.data(), piece.size()) != 0;
          };
        bonsai::GenerateResult generated = session->session.generate(request, callback);
        session->logprobs = std::move(generated.logprobs);
        session->drafted = generated.stats.drafted_tokens;
        session->accepted = generated.stats.accepted_tokens;
        if (result != nullptr) {
          bonsai_generate_result out{};
          out.text = static_cast<char *>(std::malloc(generated.text.size() + 1));
          out.tokens = static_cast<int32_t *>(
              std::malloc(std::max<size_t>(1, generated.tokens.size()) * sizeof(int32_t)));
          if (out.text == nullptr || out.tokens == nullptr) {
            std::free(out.text);
            std::free(out.tokens);
            throw std::bad_alloc();
          }
          std::memcpy(out.text, generated.text.data(), generated.text.size());
          out.text[generated.text.size()] = '\0';
          if (!generated.tokens.empty())
            std::memcpy(out.tokens, generated.tokens.data(),
                        generated.tokens.size() * sizeof(int32_t));
          out.n_tokens = generated.tokens.size();
          out.stop_reason = to_c(generated.stop_reason);
          const auto &stats = generated.stats;
          out.load_ms = stats.load_ms;
          out.prompt_tokens = stats.prompt_tokens;
          out.prompt_ms = stats.prompt_ms;
          out.prompt_tps = stats.prompt_tps;
          out.gen_tokens = stats.gen_tokens;
          out.gen_ms = stats.gen_ms;
          out.gen_tps = stats.gen_tps;
          *result = out;
        }
        return 0;
      },
      -1);
}

void bonsai_generate_result_free(bonsai_generate_result *result) {
  if (result == nullptr)
    return;
  std::free(result->text);
  std::free(result->tokens);
  *result = bonsai_generate_result{};
}

int32_t bonsai_session_logprobs(const bonsai_session *session, float *out, size_t capacity) {
  if (session == nullptr || (out == nullptr && capacity > 0)) {
    set_error("bonsai_session_logprobs: NULL argument");
    return -1;
  }
  const size_t n = std::min<size_t>(session->logprobs.size(), INT32_MAX);
  std::copy_n(session->logprobs.begin(), std::min(n, capacity), out);
  return static_cast<int32_t>(n);
}

int bonsai_session_draft_counts(const bonsai_session *session, int32_t *drafted,
                                int32_t *accepted) {
  if (session == nullptr) {
    set_error("bonsai_session_draft_counts: NULL session");
    return -1;
  }
  if (drafted != nullptr)
    *drafted = session->drafted;
  if (accepted != nullptr)
    *accepted = session->accepted;
  return 0;
}

int32_t bonsai_detokenize(const bonsai_engine *engine, const int32_t *tokens, size_t n_tokens,
                          char *out, size_t capacity) {
  return guarded(
      [&]() -> int32_t {
        if (engine == nullptr || (tokens == nullptr && n_tokens > 0) ||
            (out == nullptr && capacity > 0))
          throw bonsai::InvalidArgument("bonsai_detokenize: NULL argument");
        const std::string text =
            engine->engine.detokenize(std::vector<int32_t>(tokens, tokens + n_tokens));
        if (capacity > 0) {
          const size_t copied = std::min(text.size(), capacity - 1);
          std::memcpy(out, text.data(), copied);
          out[copied] = '\0';
        }
        return static_cast<int32_t>(std::min<size_t>(text.size(), INT32_MAX));
      },
      int32_t{-1});
}

void bonsai_set_log_callback(bonsai_log_callback callback, void *user_data) {
  if (callback == nullptr) {
    bonsai::set_log_callback(nullptr);
    return;
  }
  bonsai::set_log_callback([callback, user_data](bonsai::LogLevel level, std::string_view text) {
    const std::string line(text); // NUL-terminated for C
    callback(user_data, static_cast<int>(level), line.c_str());
  });
}

int bonsai_set_log_level(const char *level) {
  const auto parsed = level != nullptr ? bonsai::parse_log_level(level) : std::nullopt;
  if (!parsed) {
    set_error("bonsai_set_log_level: expected trace, debug, info, warn, error or off");
    return -1;
  }
  bonsai::set_log_level(*parsed);
  return 0;
}

int32_t bonsai_tokenize(const bonsai_engine *engine, const char *text, int32_t *out,
                        int32_t max_tokens) {
  return guarded(
      [&]() -> int32_t {
        if (engine == nullptr || text == nullptr || (out == nullptr && max_tokens > 0))
          throw bonsai::InvalidArgument("bonsai_tokenize: NULL argument");
        const auto tokens = engine->engine.tokenize(text);
        const auto n = static_cast<int32_t>(std::min<size_t>(tokens.size(), INT32_MAX));
        for (int32_t i = 0; i < std::min(n, max_tokens); ++i)
          out[i] = tokens[static_cast<size_t>(i)];
        return n;
      },
      int32_t{-1});
}

const char *bonsai_last_error(void) {
  return last_error_text.c_str();
}

} // extern "C"
