#pragma once

#include <string>

namespace bonsai::server {

// Whether `bytes` is well-formed UTF-8 (a token may hold part of a
// character).
bool is_valid_utf8(const std::string &bytes);

// A token's text for OpenAI's legacy logprobs shape, where tokens are object
// keys: the text itself when it is whole UTF-8, else "bytes:" and a \xNN
// escape per byte (OpenAI's form), so that two partial tokens never turn into
// the same U+FFFD key.
std::string legacy_token_text(const std::string &bytes);

} // namespace bonsai::server
