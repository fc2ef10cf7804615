#include "flood_repeater.hpp"

namespace flood {

Repeater::Repeater(std::chrono::milliseconds period, std::function<void()> step)
    : period_(period), step_(std::move(step)), thread_([this] { run(); }) {}

Repeater::~Repeater() {
  stop();
}

void Repeater::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void Repeater::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const auto next = std::chrono::steady_clock::now() + period_;
    lock.unlock();
    step_();
    lock.lock();
    wake_.wait_until(lock, next, [this] { return stopping_; });
  }
}

} // namespace flood
