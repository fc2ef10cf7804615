#pragma once
// Ollama's API on bonsai serve (docs/server.md, "Ollama API"): POST
// /api/chat and /api/generate, streamed as NDJSON (one JSON object a line)
// unless "stream": false, with Ollama's durations on the last object.
#include <string_view>

#include "reply/reply_writer.hpp"

namespace bonsai::server {

ParsedRequest parse_ollama_chat(std::string_view body, const RequestContext &context);
ParsedRequest parse_ollama_generate(std::string_view body, const RequestContext &context);

} // namespace bonsai::server
