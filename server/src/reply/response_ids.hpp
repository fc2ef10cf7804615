#pragma once
// Random ids for replies and their parts ("call_...", "msg_...", "resp_..."):
// the prefix and 24 letters and digits, about 143 bits, so that ids never
// repeat and cannot be guessed.
#include <string>
#include <string_view>

namespace bonsai::server {

std::string new_response_id(std::string_view prefix);

} // namespace bonsai::server
