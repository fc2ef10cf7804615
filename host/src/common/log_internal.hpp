#pragma once
// The host's spdlog logger and the bridge from plugin log callbacks.
#include <spdlog/logger.h>

#include "bonsai/bonsai_backend.h"
#include "bonsai/log.hpp"

namespace bonsai::host {

// The shared "bonsai" logger (created on first use, level from
// $BONSAI_LOG_LEVEL). Thread-safe.
spdlog::logger &logger();

// spdlog's level as ours (critical counts as error).
LogLevel from_spdlog(spdlog::level::level_enum level);

// The ABI level matching the host's current level (what plugins should send).
bonsai_log_level plugin_log_level();

// bonsai_log_fn for plugin contexts: `user_data` must point to a
// NUL-terminated plugin name that outlives the context.
void plugin_log_sink(void *user_data, bonsai_log_level level, const char *message);

} // namespace bonsai::host
