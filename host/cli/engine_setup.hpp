#pragma once
// Opens the model and creates a session from the shared command-line flags,
// drawing load/upload progress bars on a terminal.
#include "bonsai/engine.hpp"
#include "options.hpp"

namespace bonsai::cli {

// Throws what Engine::open / create_session throw (ModelError, PluginError,
// InvalidArgument), after checking that the model file exists and is a file.
Engine open_engine(const EngineArgs &args);
Session open_session(const Engine &engine, const EngineArgs &args);

} // namespace bonsai::cli
