// Validation of sampler parameters: every message names the field, the value
// and the allowed range.
#include <cmath>
#include <string>

#include "bonsai/core/error.hpp"
#include "bonsai/core/sampling.hpp"

namespace bonsai {
namespace {

[[noreturn]] void reject(const char *field, double value, const char *allowed) {
  throw Error(std::string("invalid sampler parameter ") + field + " = " + std::to_string(value) +
              ": " + allowed);
}

void require_finite(const char *field, float value) {
  if (!std::isfinite(value))
    reject(field, value, "must be a finite number");
}

void require_unit_interval(const char *field, float value) {
  require_finite(field, value);
  if (value < 0.0f || value > 1.0f)
    reject(field, value, "must be in [0, 1]");
}

} // namespace

void SamplerParams::validate() const {
  require_finite("temperature", temperature);
  require_unit_interval("top_p", top_p);
  require_unit_interval("min_p", min_p);
  require_finite("repeat_penalty", repeat_penalty);
  if (repeat_penalty <= 0.0f)
    reject("repeat_penalty", repeat_penalty, "must be > 0 (1 turns it off)");
  if (repeat_last_n < 0)
    reject("repeat_last_n", repeat_last_n, "must be >= 0 (0 turns the penalties off)");
  require_finite("presence_penalty", presence_penalty);
  require_finite("frequency_penalty", frequency_penalty);
}

bool SamplerParams::penalties_enabled() const {
  return repeat_last_n > 0 &&
         (repeat_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f);
}

} // namespace bonsai
