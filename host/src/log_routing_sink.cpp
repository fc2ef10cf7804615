#include "log_routing_sink.hpp"

#include "log_internal.hpp"

#include <string>

namespace bonsai::host {
void LogRoutingSink::set_callback(LogCallback callback) {
  std::lock_guard<std::mutex> lock(mutex_);
  callback_ = std::move(callback);
}

void LogRoutingSink::sink_it_(const spdlog::details::log_msg &msg) {
  if (!callback_) {
    fallback_->log(msg);
    return;
  }
  try {
    callback_(from_spdlog(msg.level), std::string_view(msg.payload.data(), msg.payload.size()));
  } catch (...) {
    // An application's callback must not break the logging thread.
  }
}

void LogRoutingSink::flush_() {
  fallback_->flush();
}

} // namespace bonsai::host
