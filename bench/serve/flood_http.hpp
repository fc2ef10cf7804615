#pragma once
// One HTTP/1.1 request on a fresh connection to 127.0.0.1, timed from the
// start of connect() to the last byte of the answer. Raw sockets with poll()
// so that every step honours one deadline.
#include <string>

namespace flood {

struct HttpResult {
  int status = 0; // 0: no answer (refused, reset, timed out)
  std::string body;
  double ms = 0;     // connect to the full answer
  std::string error; // why there is no answer
};

HttpResult http_request(int port, const std::string &method, const std::string &path,
                        const std::string &json_body, double timeout_s);

} // namespace flood
