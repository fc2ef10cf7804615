#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/log_internal.hpp"
#include "common/log_routing_sink.hpp"

namespace bonsai {
namespace {

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
  case LogLevel::trace:
    return spdlog::level::trace;
  case LogLevel::debug:
    return spdlog::level::debug;
  case LogLevel::info:
    return spdlog::level::info;
  case LogLevel::warn:
    return spdlog::level::warn;
  case LogLevel::error:
    return spdlog::level::err;
  case LogLevel::off:
    break;
  }
  return spdlog::level::off;
}

const std::shared_ptr<host::LogRoutingSink> &routing_sink() {
  static const auto sink = std::make_shared<host::LogRoutingSink>(
      std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  return sink;
}

std::shared_ptr<spdlog::logger> make_logger() {
  // Not registered in spdlog's global registry, so an application using
  // spdlog itself cannot collide with the name.
  auto logger = std::make_shared<spdlog::logger>("bonsai", routing_sink());
  logger->set_pattern("%^bonsai %l%$: %v"); // reaches the stderr sink
  LogLevel level = LogLevel::warn;
  if (const char *env = std::getenv("BONSAI_LOG_LEVEL"); env != nullptr && *env != '\0') {
    if (auto parsed = parse_log_level(env)) {
      level = *parsed;
    } else {
      logger->warn("ignoring BONSAI_LOG_LEVEL='{}': expected trace, debug, info, warn, error "
                   "or off",
                   env);
    }
  }
  logger->set_level(to_spdlog(level));
  logger->flush_on(spdlog::level::trace); // stderr: show every line at once
  return logger;
}

} // namespace

std::optional<LogLevel> parse_log_level(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "trace")
    return LogLevel::trace;
  if (lower == "debug")
    return LogLevel::debug;
  if (lower == "info")
    return LogLevel::info;
  if (lower == "warn" || lower == "warning")
    return LogLevel::warn;
  if (lower == "error")
    return LogLevel::error;
  if (lower == "off")
    return LogLevel::off;
  return std::nullopt;
}

void set_log_level(LogLevel level) {
  host::logger().set_level(to_spdlog(level));
}

LogLevel log_level() {
  return host::from_spdlog(host::logger().level());
}

void set_log_callback(LogCallback callback) {
  routing_sink()->set_callback(std::move(callback));
}

void log_message(LogLevel level, std::string_view message) {
  if (level == LogLevel::off)
    return;
  host::logger().log(to_spdlog(level), "{}", message);
}

namespace host {

LogLevel from_spdlog(spdlog::level::level_enum level) {
  switch (level) {
  case spdlog::level::trace:
    return LogLevel::trace;
  case spdlog::level::debug:
    return LogLevel::debug;
  case spdlog::level::info:
    return LogLevel::info;
  case spdlog::level::warn:
    return LogLevel::warn;
  case spdlog::level::err:
  case spdlog::level::critical:
    return LogLevel::error;
  default:
    return LogLevel::off;
  }
}

spdlog::logger &logger() {
  static const std::shared_ptr<spdlog::logger> instance = make_logger();
  return *instance;
}

bonsai_log_level plugin_log_level() {
  switch (log_level()) {
  case LogLevel::trace:
    return BONSAI_LOG_TRACE;
  case LogLevel::debug:
    return BONSAI_LOG_DEBUG;
  case LogLevel::info:
    return BONSAI_LOG_INFO;
  case LogLevel::warn:
    return BONSAI_LOG_WARN;
  case LogLevel::error:
    return BONSAI_LOG_ERROR;
  case LogLevel::off:
    break;
  }
  return BONSAI_LOG_OFF;
}

void plugin_log_sink(void *user_data, bonsai_log_level level, const char *message) {
  // Called from plugin threads: must not throw back across the C boundary.
  try {
    const char *plugin = user_data != nullptr ? static_cast<const char *>(user_data) : "plugin";
    LogLevel host_level = LogLevel::off;
    switch (level) {
    case BONSAI_LOG_TRACE:
      host_level = LogLevel::trace;
      break;
    case BONSAI_LOG_DEBUG:
      host_level = LogLevel::debug;
      break;
    case BONSAI_LOG_INFO:
      host_level = LogLevel::info;
      break;
    case BONSAI_LOG_WARN:
      host_level = LogLevel::warn;
      break;
    case BONSAI_LOG_ERROR:
      host_level = LogLevel::error;
      break;
    default:
      return;
    }
    logger().log(to_spdlog(host_level), "[{}] {}", plugin, message != nullptr ? message : "");
  } catch (...) {
    // Logging is best effort; a failing sink must not take the plugin down.
  }
}

} // namespace host
} // namespace bonsai
