#pragma once
// The host logger's one sink: lines go to stderr (coloured), or to the
// application's callback once it set one (set_log_callback). Switching is
// safe while other threads log. The callback runs outside the sink's lock,
// so a callback may set another callback without deadlocking.
#include <spdlog/sinks/sink.h>

#include <memory>
#include <mutex>

#include "bonsai/log.hpp"

namespace bonsai::host {

class LogRoutingSink : public spdlog::sinks::sink {
public:
  explicit LogRoutingSink(std::shared_ptr<spdlog::sinks::sink> fallback)
      : fallback_(std::move(fallback)) {}
  // An empty callback sends lines to the fallback again.
  void set_callback(LogCallback callback);

  void log(const spdlog::details::log_msg &msg) override;
  void flush() override { fallback_->flush(); }
  // The pattern is the fallback's; a callback gets the bare message.
  void set_pattern(const std::string &pattern) override { fallback_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    fallback_->set_formatter(std::move(formatter));
  }

private:
  std::shared_ptr<spdlog::sinks::sink> fallback_; // thread-safe itself (_mt)
  std::mutex mutex_;                              // guards callback_
  std::shared_ptr<const LogCallback> callback_;
};

} // namespace bonsai::host
