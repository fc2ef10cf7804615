#include "engine_setup.hpp"

#include <unistd.h>

#include <cstdio>
#include <memory>

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
  // llama.cpp runs -ngl on the CPU when it finds no GPU; so do we, but say so.
  if (!args.gpu_request.empty() && engine.backend().name != "cuda")
    std::fprintf(stderr, "bonsai: note: %s: no GPU found, running on the CPU\n",
                 args.gpu_request.c_str());
  return engine;
}

namespace {

// Runs make(progress callback) under the "uploading weights" bar. The
// callback shares the bar: a batch keeps it for the sessions it opens later
// (past a plugin's slots), when the bar is finished and draws nothing.
template <class Make> auto with_upload_bar(const EngineArgs &args, Make &&make) {
  const auto bar = std::make_shared<ProgressBar>("uploading weights", draw_progress(args));
  // Always set, so the engine's own progress callback is never reused.
  auto made = make([bar](double fraction) { bar->update(fraction); });
  bar->finish();
  return made;
}

} // namespace

Session open_session(const Engine &engine, const EngineArgs &args) {
  return with_upload_bar(args, [&engine](ProgressFn progress) {
    SessionOptions options;
    options.on_progress = std::move(progress);
    return engine.create_session(options);
  });
}

Batch open_batch(const Engine &engine, const EngineArgs &args, int32_t max_sequences) {
  return with_upload_bar(args, [&engine, max_sequences](ProgressFn progress) {
    BatchOptions options;
    options.max_sequences = max_sequences;
    options.on_progress = std::move(progress);
    return engine.create_batch(options);
  });
}

EngineArgs draft_engine_args(const DraftArgs &args, const EngineArgs &engine_args) {
  EngineArgs draft_args = engine_args;
  draft_args.model = args.model_draft;
  draft_args.gpu_request.clear();
  if (!args.backend_draft.empty()) {
    draft_args.backend = args.backend_draft;
    // Another backend's options would not fit it.
    draft_args.backend_options = args.backend_options_draft;
  } else if (!args.backend_options_draft.empty()) {
    draft_args.backend_options = args.backend_options_draft;
  }
  return draft_args;
}

void open_draft(const DraftArgs &args, const Engine &engine, const EngineArgs &engine_args,
                DraftRuntime &out) {
  out.options = args.options;
  if (args.options.mtp && engine.model().n_mtp_layers < 1)
    throw InvalidArgument(engine_args.model +
                          ": --draft-mtp needs a model with a multi-token-prediction layer (a "
                          "qwen35 file whose nextn_predict_layers is at least 1); this " +
                          engine.model().architecture + " model has none");
  if (args.model_draft.empty())
    return;
  const EngineArgs draft_args = draft_engine_args(args, engine_args);
  out.engine.emplace(open_engine(draft_args));
  out.session.emplace(open_session(*out.engine, draft_args));
  out.options.model = &*out.session;
}

} // namespace bonsai::cli
