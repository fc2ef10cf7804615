#include "bench_tune.hpp"

#include <cstdio>
#include <string_view>

namespace bonsai::cli {
namespace {

const char *level_name(LogLevel level) {
  switch (level) {
  case LogLevel::trace:
    return "trace";
  case LogLevel::debug:
    return "debug";
  case LogLevel::info:
    return "info";
  case LogLevel::warn:
    return "warning";
  case LogLevel::error:
    return "error";
  case LogLevel::off:
    break;
  }
  return "off";
}

} // namespace

TuneTables::TuneTables(std::string &backend_options) : saved_(log_level()) {
  backend_options += backend_options.empty() ? "tune=fresh" : ";tune=fresh";
  const LogLevel shown = saved_;
  // The tables are info lines of the plugin ("[cuda] decode tune: ...").
  if (saved_ > LogLevel::info)
    set_log_level(LogLevel::info);
  set_log_callback([shown](LogLevel level, std::string_view message) {
    if (message.find("decode tune:") != std::string_view::npos)
      std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
    else if (level >= shown)
      std::fprintf(stderr, "bonsai %s: %.*s\n", level_name(level), static_cast<int>(message.size()),
                   message.data());
  });
}

TuneTables::~TuneTables() {
  set_log_callback(nullptr);
  set_log_level(saved_);
}

} // namespace bonsai::cli
