#pragma once
// bonsai bench --tune: the CUDA plugin's decode tuner (docs/cuda.md, "The
// decode tuner") run afresh for every step width the bench meets (backend
// option tune=fresh), each width's table of candidates and their times on
// stderr as the plugin measures it. Other plugins ignore the option (with
// their warning about an unknown key).
#include <string>

#include "bonsai/log.hpp"

namespace bonsai::cli {

class TuneTables {
public:
  // Adds tune=fresh to `backend_options` and routes the plugin's table lines
  // to stderr (the rest of the log as before) until destroyed. Before the
  // engine opens: the log level a context gets is fixed when it is made.
  explicit TuneTables(std::string &backend_options);
  ~TuneTables();
  TuneTables(const TuneTables &) = delete;
  TuneTables &operator=(const TuneTables &) = delete;

private:
  LogLevel saved_;
};

} // namespace bonsai::cli
