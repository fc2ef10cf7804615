#pragma once
// Ollama's model endpoints for the one model bonsai serves (docs/server.md,
// "Ollama API"): GET /api/tags and /api/ps (the model), POST /api/show (its
// details), GET /api/version.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "bonsai/engine.hpp"
#include "request/completion_spec.hpp"

namespace bonsai::server {

// What the endpoints show of the model.
struct OllamaModel {
  std::string name;               // "ID:latest" (ollama_model_name)
  std::string modified_at;        // the file's modification time
  uint64_t size = 0;              // bytes of the file
  std::string digest;             // a fingerprint of the file (see ollama_model_of)
  std::string family;             // the architecture: "qwen3", "qwen35"
  std::string parameter_size;     // "1.7B"
  std::string quantization_level; // the weight type: "Q1_0"
  int32_t n_ctx = 0;              // positions per request
  uint64_t n_params = 0;
  int32_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, n_vocab = 0, n_ctx_train = 0;
};

// `n_ctx`: the positions a request may use. The digest is a SHA-256-sized
// hex fingerprint of the file's path, size and modification time, not a hash
// of its bytes (which would take seconds to read for a large file).
OllamaModel ollama_model_of(const Engine &engine, const std::string &model_id, int32_t n_ctx);

std::string ollama_tags_body(const OllamaModel &model);
std::string ollama_ps_body(const OllamaModel &model);
// {"version": ...}: the Ollama release whose API bonsai follows.
std::string ollama_version_body();
// POST /api/show {"model" (or "name"), "verbose"?}: any name shows the one
// model served.
std::string ollama_show_body(const OllamaModel &model, const RequestContext &context,
                             std::string_view body);

// A time as RFC 3339 in UTC with microseconds ("2025-01-02T03:04:05.123456Z").
std::string rfc3339(std::chrono::system_clock::time_point time);

} // namespace bonsai::server
