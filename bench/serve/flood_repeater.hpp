#pragma once
// A thread that runs one step again and again, starting a step at most every
// `period` (a slow step is followed at once by the next), until stop(). The
// probes and the RSS sampler each run on one, so that a slow answer delays
// only its own kind of measurement.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace flood {

class Repeater {
public:
  Repeater(std::chrono::milliseconds period, std::function<void()> step);
  ~Repeater(); // stop()
  Repeater(const Repeater &) = delete;
  Repeater &operator=(const Repeater &) = delete;
  // Lets the step in progress finish, then ends the thread. What the steps
  // wrote may be read after this returns.
  void stop();

private:
  void run();

  std::chrono::milliseconds period_;
  std::function<void()> step_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace flood
