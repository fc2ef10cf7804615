#pragma once
// The endpoints clients probe besides the completions, in llama-server's
// shapes: POST /tokenize, /detokenize and /apply-template (answered on a
// worker: they parse a body and may tokenize a long text), GET /props, and
// the context length in /v1/models. Every bad body is a 400 naming the field.
#include <string>
#include <string_view>

#include "bonsai/engine.hpp"
#include "request/completion_spec.hpp"

namespace bonsai::server {

// POST /tokenize {"content", "add_special"?, "parse_special"? (default true),
// "with_pieces"?} -> {"tokens": [ids]}, or [{"id", "piece"}] with pieces
// (a piece that is not whole UTF-8 is given as its list of bytes).
std::string tokenize_body(const Engine &engine, const RequestContext &context,
                          std::string_view body);
// POST /detokenize {"tokens": [ids]} -> {"content": text}.
std::string detokenize_body(const Engine &engine, const RequestContext &context,
                            std::string_view body);
// POST /apply-template {"messages", "add_generation_prompt"? (default true),
// "enable_thinking"? / "chat_template_kwargs"?} -> {"prompt": text}.
std::string apply_template_body(const Engine &engine, const RequestContext &context,
                                std::string_view body);

// What GET /props reports: the model, the context each request may use, the
// slots, and which request features this server honours.
struct PropsFacts {
  std::string model_id;
  std::string model_path;
  int32_t n_ctx = 0;
  int32_t total_slots = 0;
};
std::string props_body(const Engine &engine, const PropsFacts &facts);

} // namespace bonsai::server
