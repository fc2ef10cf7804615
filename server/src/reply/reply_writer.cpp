#include "reply/reply_writer.hpp"

namespace bonsai::server {

std::string sse_event(std::string_view name, std::string_view data) {
  std::string out;
  if (!name.empty())
    out.append("event: ").append(name).append("\n");
  return out.append("data: ").append(data).append("\n\n");
}

} // namespace bonsai::server
