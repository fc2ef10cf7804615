#pragma once
// The host logger's one sink: lines go to stderr (coloured), or to the
// application's callback once it set one (set_log_callback). Switching is
// safe while other threads log: the sink's mutex guards the callback.
#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>

#include "bonsai/log.hpp"

namespace bonsai::host {

class LogRoutingSink : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit LogRoutingSink(std::shared_ptr<spdlog::sinks::sink> fallback)
      : fallback_(std::move(fallback)) {}
  // An empty callback sends lines to the fallback again.
  void set_callback(LogCallback callback);

protected:
  void sink_it_(const spdlog::details::log_msg &msg) override;
  void flush_() override;

private:
  std::shared_ptr<spdlog::sinks::sink> fallback_;
  LogCallback callback_;
};

} // namespace bonsai::host
