#include "tune_timer.hpp"

#include <exception>

#include "plugin_error.hpp"

namespace bonsai::cuda {

StepTimer::StepTimer(const Device &device) : device_(device) {
  const DriverApi &api = device.api();
  device.check(api.cuEventCreate(&start_, 0), "cuEventCreate");
  const CUresult made = api.cuEventCreate(&stop_, 0);
  if (made != kCudaSuccess) {
    api.cuEventDestroy(start_);
    device.check(made, "cuEventCreate");
  }
}

StepTimer::~StepTimer() {
  if (device_.abandoned())
    return;
  device_.api().cuEventDestroy(start_);
  device_.api().cuEventDestroy(stop_);
}

void StepTimer::start() {
  device_.check(device_.api().cuEventRecord(start_, device_.stream()), "cuEventRecord");
}

void StepTimer::stop() {
  device_.check(device_.api().cuEventRecord(stop_, device_.stream()), "cuEventRecord");
}

double StepTimer::elapsed_us() {
  const DriverApi &api = device_.api();
  device_.check(api.cuEventSynchronize(stop_), "cuEventSynchronize");
  if (api.cuEventElapsedTime == nullptr)
    fail(BONSAI_ERR_INTERNAL, "the driver has no cuEventElapsedTime");
  float ms = 0;
  device_.check(api.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
  return static_cast<double>(ms) * 1000.0;
}

std::string stream_timing_error(const Device &device) {
  if (device.api().cuEventElapsedTime == nullptr)
    return "the driver has no cuEventElapsedTime";
  try {
    StepTimer timer(device);
    timer.start();
    timer.stop();
    timer.elapsed_us();
  } catch (const std::exception &error) {
    return error.what();
  }
  return {};
}

} // namespace bonsai::cuda
