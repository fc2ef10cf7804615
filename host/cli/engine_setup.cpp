#include "engine_setup.hpp"

#include <unistd.h>

#include "bonsai/progress.hpp"
#include "model_file.hpp"

namespace bonsai::cli {
namespace {

// Bars only on a terminal: piped stderr stays free of carriage returns.
bool draw_progress(const EngineArgs &args) {
  return args.progress && isatty(STDERR_FILENO) == 1;
}

} // namespace

Engine open_engine(const EngineArgs &args) {
  check_model_path(args.model);
  EngineOptions options;
  options.backend = args.backend;
  options.n_threads = args.n_threads;
  options.n_ctx = args.n_ctx;
  options.n_batch = args.n_batch;
  options.plugin_options = args.backend_options;
  options.rope_scaling = args.rope.scaling;
  options.rope_scale = args.rope.scale;
  options.rope_freq_base = args.rope.freq_base;
  options.yarn_orig_ctx = static_cast<int32_t>(args.rope.yarn_orig_ctx);
  ProgressBar bar("loading model", draw_progress(args));
  if (bar.enabled())
    options.on_progress = [&bar](double fraction) { bar.update(fraction); };
  Engine engine = Engine::open(args.model, options);
  bar.finish();
  return engine;
}

Session open_session(const Engine &engine, const EngineArgs &args) {
  ProgressBar bar("uploading weights", draw_progress(args));
  SessionOptions options;
  // Always set, so the engine's own progress callback is never reused.
  options.on_progress = [&bar](double fraction) { bar.update(fraction); };
  Session session = engine.create_session(options);
  bar.finish();
  return session;
}

} // namespace bonsai::cli
