#pragma once
// Reads the bodies of Ollama's POST /api/chat and /api/generate into the
// internal request (docs/server.md, "Ollama API"). Every problem is an
// ApiError 400 naming the field (answered as Ollama's {"error": "..."}).
#include <string>
#include <string_view>

#include "request/completion_spec.hpp"

namespace bonsai::server {

enum class OllamaEndpoint { chat, generate };

struct OllamaRequest {
  CompletionSpec spec;
  // The request asked for no thinking ("think": false): a think block the
  // model writes anyway is dropped.
  bool hide_thinking = false;
  // An empty prompt or message list: the model is loaded (it always is),
  // and nothing is generated.
  bool load_only = false;
};

OllamaRequest read_ollama_request(std::string_view body, const RequestContext &context,
                                  OllamaEndpoint endpoint);

// The served model's name as Ollama spells names: "NAME:TAG", ":latest"
// added when the id has no tag.
std::string ollama_model_name(const std::string &model_id);

} // namespace bonsai::server
