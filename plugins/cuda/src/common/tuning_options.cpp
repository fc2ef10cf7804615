#include "tuning_options.hpp"

#include "plugin_error.hpp"

namespace bonsai::cuda {

bool parse_tuning_option(const std::string &key, const std::string &value, TuningOptions &out) {
  if (key == "tune") {
    if (value != "on" && value != "off" && value != "fresh")
      fail_invalid("option tune=" + value + ": expected on, off or fresh");
    out.tune = value == "on" ? TuneMode::on : value == "off" ? TuneMode::off : TuneMode::fresh;
    return true;
  }
  if (key == "tune_budget_ms") {
    bool digits = !value.empty() && value.size() <= 6;
    for (const char c : value)
      digits = digits && c >= '0' && c <= '9';
    const int ms = digits ? std::stoi(value) : 0;
    if (ms < 1 || ms > 600000)
      fail_invalid("option tune_budget_ms=" + value +
                   ": expected a whole number of milliseconds from 1 to 600000");
    out.tune_budget_ms = ms;
    return true;
  }
  if (key == "persistent_shares") {
    if (value != "tiles" && value != "balanced")
      fail_invalid("option persistent_shares=" + value + ": expected tiles or balanced");
    out.balanced_shares = value == "balanced";
    return true;
  }
  if (key == "persistent_stream") {
    if (value != "off" && value != "2" && value != "3" && value != "4")
      fail_invalid("option persistent_stream=" + value + ": expected off, 2, 3 or 4");
    out.stream_slots = value == "off" ? 1 : value[0] - '0';
    return true;
  }
  if (key == "persistent_qkv") {
    if (value != "apart" && value != "fused")
      fail_invalid("option persistent_qkv=" + value + ": expected apart or fused");
    out.fused_qkv_attention = value == "fused";
    return true;
  }
  return false;
}

} // namespace bonsai::cuda
