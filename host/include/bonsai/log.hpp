#pragma once
// Host logging: one spdlog logger ("bonsai", colored, to stderr). Plugins' log
// callbacks arrive here prefixed with the plugin name. The initial level comes
// from $BONSAI_LOG_LEVEL (trace, debug, info, warn, error, off; default warn).
#include <functional>
#include <optional>
#include <string_view>

#include "bonsai/export.hpp"

namespace bonsai {

enum class LogLevel { trace, debug, info, warn, error, off };

// Sets the least severe level that is printed (also forwarded to plugin
// contexts created afterwards). Thread-safe.
BONSAI_HOST_API void set_log_level(LogLevel level);
BONSAI_HOST_API LogLevel log_level();
// "trace" ... "off" (case-insensitive; "warning" is accepted too); nullopt if unknown.
BONSAI_HOST_API std::optional<LogLevel> parse_log_level(std::string_view text);
// Writes one message through the host logger. Thread-safe.
BONSAI_HOST_API void log_message(LogLevel level, std::string_view message);

// Receives each log line at or above log_level(): the message alone, without
// the "bonsai warn:" prefix (plugin lines keep their "[cpu] " tag).
using LogCallback = std::function<void(LogLevel level, std::string_view message)>;
// Sends the host's log lines (plugins' included) to `callback` instead of
// stderr; an empty callback restores stderr. Thread-safe. The callback is
// called from whichever thread logs, possibly from several at once; it may
// call set_log_callback, but must not log itself (that would recurse).
// Exceptions it throws are swallowed.
BONSAI_HOST_API void set_log_callback(LogCallback callback);

} // namespace bonsai
