#pragma once
// Times what the context's stream runs between two points with a pair of
// CUDA events: device time, without the host's turns between steps.
#include <string>

#include "device.hpp"

namespace bonsai::cuda {

class StepTimer {
public:
  // Throws PluginError when the events cannot be made.
  explicit StepTimer(const Device &device);
  ~StepTimer();
  StepTimer(const StepTimer &) = delete;
  StepTimer &operator=(const StepTimer &) = delete;

  void start(); // queues the first event
  void stop();  // queues the second
  // Waits for the second event; the microseconds between the two. Throws
  // PluginError when the driver cannot time them.
  double elapsed_us();

private:
  const Device &device_;
  CUevent start_ = nullptr, stop_ = nullptr;
};

// "" when the driver times the stream (an empty pair of events measures),
// else why not (no cuEventElapsedTime, or the error it gave).
std::string stream_timing_error(const Device &device);

} // namespace bonsai::cuda
