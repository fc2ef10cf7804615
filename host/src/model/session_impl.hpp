#pragma once
// What a Session holds: its plugin context with the model's weights, the
// runner that executes steps, and the token history of its KV cache.
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "bonsai/engine.hpp"
#include "model/engine_impl.hpp"
#include "model/forward_runner.hpp"
#include "model/model_upload.hpp"
#include "model/mtp_track.hpp"
#include "plugins/plugin_context.hpp"

namespace bonsai {

struct Session::Impl {
  // Member order is destruction order reversed: the runner goes before the
  // context it calls, the context before the engine (mapping, library).
  std::shared_ptr<const Engine::Impl> engine;
  std::unique_ptr<host::PluginContext> context;
  host::UploadedModel weights;
  std::unique_ptr<host::ForwardRunner> runner;
  bool plugin_layers = false;
  double upload_ms = 0;

  std::vector<int32_t> history;   // ids in the KV cache
  std::optional<int32_t> pending; // sampled by generate() but not evaluated yet
  std::atomic<bool> cancel_requested{false};
  std::vector<float> scratch_logits;
  // The MTP draft's layer and entries (qwen35), made by attach_mtp(): from
  // then on every step passes its hidden states to it.
  std::unique_ptr<host::MtpTrack> mtp;
  std::vector<float> scratch_hidden;

  int32_t n_ctx() const { return engine->options.n_ctx; }
  int32_t n_batch() const { return engine->options.n_batch; }

  // What run_tokens() returns from the last step.
  enum class Want { nothing, last_argmax, last_logits, all_logits };
  // Runs tokens (validated, fitting the context) in steps of at most n_batch,
  // updating history. `logits` receives rows per `want` (resized);
  // `argmax` the last token's argmax for Want::last_argmax. Returns false
  // when cancelled (tokens of completed steps stay in the cache).
  bool run_tokens(std::span<const int32_t> tokens, Want want, std::vector<float> *logits,
                  int32_t *argmax);
  // Drops cache entries past n (history and runner).
  void truncate_to(int32_t n);
  // Throws ContextFullError when `extra` more positions do not fit.
  void check_fits(int64_t position, int64_t extra, const char *what) const;
  // Uploads the model's MTP layer into this context and starts tracking
  // (once; later calls return the same track). Throws InvalidArgument,
  // naming `what`, when the model has no usable MTP layer or the backend
  // gives no hidden states; PluginError when an upload fails.
  host::MtpTrack &attach_mtp(const char *what);
};

// Creates a session's context, uploads the weights, binds them and picks the
// runner: what Engine::create_session does (create_batch shares it).
// `on_progress` empty = the engine's.
std::unique_ptr<Session::Impl> open_session(const std::shared_ptr<const Engine::Impl> &engine,
                                            const ProgressFn &on_progress);

} // namespace bonsai
