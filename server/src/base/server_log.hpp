#pragma once
// The server logs through the host's logger (bonsai::log_message), so that
// --log-level, BONSAI_LOG_LEVEL and an embedder's log callback apply to it.
#include <utility>

#include <fmt/format.h>

#include "bonsai/log.hpp"

namespace bonsai::server {

template <typename... Args>
void log_at(LogLevel level, fmt::format_string<Args...> format, Args &&...args) {
  if (level >= log_level())
    log_message(level, fmt::format(format, std::forward<Args>(args)...));
}

} // namespace bonsai::server
