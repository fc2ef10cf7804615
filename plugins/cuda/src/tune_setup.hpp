#pragma once
// What a context's decode tuner works with (tuner.hpp): the device and build
// its choices are keyed and stamped with, the cache folder, and whether the
// driver can time the stream at all.
#include <optional>
#include <string>

#include "tune_cache.hpp"

namespace bonsai::cuda {

struct TuneSetup {
  std::string device;             // "NVIDIA H200, sm_90, 132 SMs"
  int driver_version = 0;         // cuDriverGetVersion
  std::string build;              // plugin_build_id()
  std::optional<TuneCache> cache; // none where the disk cache is off
  // "" when the driver times the stream (an empty pair of events measured
  // at context creation), else why not; set only under decode=auto with
  // tuning on.
  std::string timing_error = "not probed";
};

} // namespace bonsai::cuda
