#pragma once
// Shared by the bonsai plugins: a context's log sink, the host's callback
// and the least severe level it wants. Callers that check enabled() first
// never format messages below that level.
#include <string>

#include "bonsai/bonsai_backend.h"

namespace bonsai::plugin {

class Logger {
public:
  Logger() = default;
  Logger(bonsai_log_fn fn, void *user_data, bonsai_log_level level)
      : fn_(fn), user_data_(user_data), level_(level) {}

  bool enabled(bonsai_log_level level) const {
    return fn_ != nullptr && level >= level_ && level < BONSAI_LOG_OFF;
  }
  void log(bonsai_log_level level, const std::string &message) const {
    if (enabled(level))
      fn_(user_data_, level, message.c_str());
  }
  void debug(const std::string &message) const { log(BONSAI_LOG_DEBUG, message); }
  void info(const std::string &message) const { log(BONSAI_LOG_INFO, message); }
  void warn(const std::string &message) const { log(BONSAI_LOG_WARN, message); }

private:
  bonsai_log_fn fn_ = nullptr;
  void *user_data_ = nullptr;
  bonsai_log_level level_ = BONSAI_LOG_OFF;
};

} // namespace bonsai::plugin
