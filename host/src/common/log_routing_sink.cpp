#include "common/log_routing_sink.hpp"

#include "common/log_internal.hpp"

namespace bonsai::host {

void LogRoutingSink::set_callback(LogCallback callback) {
  auto shared = callback ? std::make_shared<const LogCallback>(std::move(callback)) : nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  callback_ = std::move(shared);
}

void LogRoutingSink::log(const spdlog::details::log_msg &msg) {
  std::shared_ptr<const LogCallback> callback;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    callback = callback_;
  }
  if (!callback) {
    fallback_->log(msg);
    return;
  }
  try {
    (*callback)(from_spdlog(msg.level), std::string_view(msg.payload.data(), msg.payload.size()));
  } catch (...) {
    // An application's callback must not break the logging thread.
  }
}

} // namespace bonsai::host
