#pragma once
// Opens the model and creates a session from the shared command-line flags,
// drawing load/upload progress bars on a terminal.
#include <optional>

#include "bonsai/batch.hpp"
#include "bonsai/engine.hpp"
#include "options.hpp"

namespace bonsai::cli {

// Throws what Engine::open / create_session throw (ModelError, PluginError,
// InvalidArgument), after checking that the model file exists and is a file.
Engine open_engine(const EngineArgs &args);
Session open_session(const Engine &engine, const EngineArgs &args);

// The draft model of --model-draft, opened like the model (same threads and
// context; same backend unless --backend-draft), and the options that point
// at it.
struct DraftRuntime {
  std::optional<Engine> engine;
  std::optional<Session> session;
  DraftOptions options;
};
// Fills `out` from the flags; `out` must stay where it is while used.
// Checks that `engine`'s model can draft with its MTP layer when asked.
void open_draft(const DraftArgs &args, const Engine &engine, const EngineArgs &engine_args,
                DraftRuntime &out);
// The draft model's engine arguments: the model's, with the draft's file and
// any --backend-draft / --backend-options-draft.
EngineArgs draft_engine_args(const DraftArgs &args, const EngineArgs &engine_args);
// A batch of `max_sequences` sequences (bonsai bench -np).
Batch open_batch(const Engine &engine, const EngineArgs &args, int32_t max_sequences);

} // namespace bonsai::cli
