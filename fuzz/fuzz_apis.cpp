// Fuzz target: the request bodies of bonsai serve's other APIs (POST
// /v1/responses, /v1/messages, /v1/messages/count_tokens, /api/chat,
// /api/generate). The first byte picks the API; the rest is the body. Every
// input must either be read into a request within the documented ranges and
// limits (small ones here, so that inputs reach them) or be refused with an
// ApiError 400 whose error body is JSON in each API's shape; nothing else may
// escape. The same bytes, as a model's reply, then go through the reply split
// and the blocks the Messages and Responses writers build on: blocks open,
// grow and close in order, and hold exactly the text they were given.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/anthropic/anthropic_request.hpp"
#include "api/ollama/ollama_request.hpp"
#include "api/responses/responses_request.hpp"
#include "base/api_errors.hpp"
#include "fuzz_support.hpp"
#include "reply/reply_blocks.hpp"
#include "request/field_notes.hpp"

using bonsai::fuzz::require;
using namespace bonsai::server;

namespace {

void check_spec(const CompletionSpec &spec) {
  const bonsai::GenerateRequest &g = spec.generate;
  require(spec.model == "model" || spec.model == "model:latest", "the served model is named");
  require(g.n_predict == -1 || g.n_predict >= 1, "the reply's limit is -1 (none) or >= 1");
  require(g.sampling.temperature >= 0 && g.sampling.temperature <= 2, "temperature in [0, 2]");
  require(g.sampling.top_p >= 0 && g.sampling.top_p <= 1, "top_p in [0, 1]");
  require(g.sampling.top_k >= 0, "top_k >= 0");
  require(g.stop_strings.size() <= 4, "at most max_stop_strings stop strings");
  for (const auto &stop : g.stop_strings)
    require(!stop.empty() && stop.size() <= 16, "no empty or overlong stop string");
  size_t bytes = g.prompt.size();
  for (const auto &message : g.messages) {
    bytes += message.content.size();
    for (const auto &call : message.tool_calls)
      bytes += call.name.size() + call.arguments.size();
  }
  for (const auto &tool : g.tools)
    bytes += tool.size();
  require(bytes <= 2048, "the prompt text is within max_prompt_bytes");
  require(g.tools.size() <= 128, "at most 128 tools");
  require((g.format.kind == bonsai::ReplyFormat::Kind::text) == spec.format_param.empty(),
          "a reply format names the field its errors belong to");
  require((g.format.kind != bonsai::ReplyFormat::Kind::tool_calls &&
           g.format.kind != bonsai::ReplyFormat::Kind::tool_calls_or_json) ||
              spec.parse_tool_calls,
          "required calls are parsed as calls");
  require(g.format.kind == bonsai::ReplyFormat::Kind::text || g.stop_strings.empty(),
          "no stop string cuts a formatted reply");
  require(spec.n == 1 && spec.n_ctx >= 0, "one choice, a context of its own or the slot's");
}

// The compatibility notes a body left: a bounded number of headers, each
// value printable and bounded, whatever names the body held.
void check_notes(const FieldNotes &notes) {
  const auto headers = notes.headers();
  require(headers.size() <= 1 + FieldNotes::kMaxEntries, "a bounded number of note headers");
  for (const auto &[name, value] : headers) {
    require(name == "Bonsai-Ignored-Fields" || name == "Bonsai-Warning", "only the notes' headers");
    require(value.size() <= 2200, "a note header is bounded");
    for (const char c : value)
      require(c >= 0x20 && c < 0x7f, "a note header is printable ASCII");
  }
}

// The bytes as a model's reply, in pieces of `step` bytes.
void split_into_blocks(std::string_view text, const CompletionSpec &spec, size_t step) {
  ReplySplit split(spec);
  ReplyBlocks blocks(true);
  std::string given; // reasoning and content handed to the blocks
  size_t calls = 0;
  int64_t open = -1;
  size_t seen = 0; // blocks opened so far
  const auto take = [&](const ReplyPiece &piece, bool last) {
    given += piece.parts.reasoning + piece.parts.content;
    calls += piece.calls.size();
    for (const BlockEvent &e : blocks.feed(piece, last)) {
      switch (e.what) {
      case BlockEvent::What::open:
        require(open == -1 && e.index == seen, "a block opens after the last one closed");
        open = static_cast<int64_t>(e.index);
        ++seen;
        break;
      case BlockEvent::What::delta:
        require(open == static_cast<int64_t>(e.index) && !e.delta.empty(),
                "a delta goes to the open block and carries something");
        break;
      case BlockEvent::What::close:
        require(open == static_cast<int64_t>(e.index), "the open block closes");
        open = -1;
        break;
      }
    }
  };
  for (size_t at = 0; at < text.size(); at += step) {
    bonsai::server::JobEvent event;
    event.text = std::string(text.substr(at, step));
    take(split.next(event), false);
  }
  bonsai::server::JobEvent last;
  last.finish = Finish::stop;
  take(split.next(last), true);
  require(open == -1, "no block is left open at the end");
  std::string held;
  size_t call_blocks = 0;
  for (const ReplyBlock &block : blocks.blocks()) {
    held += block.text;
    call_blocks += block.kind == ReplyBlock::Kind::tool_call;
    require(block.kind == ReplyBlock::Kind::tool_call || !block.text.empty(),
            "a text or reasoning block is never empty");
  }
  require(held == given && call_blocks == calls, "the blocks hold exactly what they were given");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const std::string_view body(reinterpret_cast<const char *>(data + 1), size - 1);
  RequestContext context;
  context.model_id = "model";
  context.json = {8, 4096, 64, 32};
  context.max_prompt_bytes = 2048;
  context.max_stop_strings = 4;
  context.max_stop_string_bytes = 16;
  const int api = data[0] % 5;
  CompletionSpec spec;
  FieldNotes notes;
  try {
    const FieldNotesScope scope(notes);
    switch (api) {
    case 0:
      spec = read_responses_request(body, context).spec;
      break;
    case 1:
    case 2:
      spec =
          read_messages_request(
              body, context, api == 1 ? MessagesEndpoint::create : MessagesEndpoint::count_tokens)
              .spec;
      break;
    default:
      spec = read_ollama_request(body, context,
                                 api == 3 ? OllamaEndpoint::chat : OllamaEndpoint::generate)
                 .spec;
      break;
    }
    check_spec(spec);
    check_notes(notes);
  } catch (const ApiError &error) {
    require(error.status == 400, "a refused request is 400");
    for (const ErrorShape shape : {ErrorShape::openai, ErrorShape::anthropic, ErrorShape::ollama})
      require(nlohmann::json::accept(error_body(error, shape)), "every error body is JSON");
  }
  spec.endpoint = Endpoint::chat;
  spec.parse_tool_calls = (data[0] & 8) != 0;
  spec.reasoning_open = (data[0] & 16) != 0;
  split_into_blocks(body, spec, 1 + (data[0] >> 5));
  return 0;
}
