#include "reply/token_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace bonsai::server {

bool is_valid_utf8(const std::string &bytes) {
  try {
    (void)nlohmann::json(bytes).dump(); // the strict handler throws on bad UTF-8
    return true;
  } catch (const nlohmann::json::type_error &) {
    return false;
  }
}

std::string legacy_token_text(const std::string &bytes) {
  if (is_valid_utf8(bytes))
    return bytes;
  std::string text = "bytes:";
  for (const unsigned char c : bytes)
    text += fmt::format("\\x{:02x}", c);
  return text;
}

} // namespace bonsai::server
