#pragma once
// Host logging: one spdlog logger ("bonsai", colored, to stderr). Plugins' log
// callbacks arrive here prefixed with the plugin name. The initial level comes
// from $BONSAI_LOG_LEVEL (trace, debug, info, warn, error, off; default warn).
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

} // namespace bonsai
