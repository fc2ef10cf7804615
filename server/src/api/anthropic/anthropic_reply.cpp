// The reply to POST /v1/messages in Anthropic's shapes, and count_tokens.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/anthropic/anthropic_api.hpp"
#include "api/anthropic/anthropic_request.hpp"
#include "base/api_errors.hpp"
#include "bonsai/generation.hpp"
#include "reply/reply_blocks.hpp"
#include "reply/response_ids.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

std::string dump(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A call's id in Anthropic's spelling: "toolu_" and the same random part.
std::string tool_use_id(const ParsedToolCall &call) {
  return "toolu_" + call.id.substr(call.id.find('_') + 1);
}

// A block as content_block_start opens it (empty), or as a whole reply
// gives it.
json block_json(const ReplyBlock &block, bool opening) {
  switch (block.kind) {
  case ReplyBlock::Kind::reasoning:
    return {{"type", "thinking"}, {"thinking", opening ? "" : block.text}, {"signature", ""}};
  case ReplyBlock::Kind::text:
    return {{"type", "text"}, {"text", opening ? "" : block.text}};
  case ReplyBlock::Kind::tool_call:
    break;
  }
  json input = json::object();
  if (!opening)
    input = json::parse(block.call.arguments); // the splitter's own JSON text of an object
  return {{"type", "tool_use"},
          {"id", tool_use_id(block.call)},
          {"name", block.call.name},
          {"input", std::move(input)}};
}

json delta_json(const ReplyBlock &block, const std::string &delta) {
  switch (block.kind) {
  case ReplyBlock::Kind::reasoning:
    return {{"type", "thinking_delta"}, {"thinking", delta}};
  case ReplyBlock::Kind::text:
    return {{"type", "text_delta"}, {"text", delta}};
  case ReplyBlock::Kind::tool_call:
    break;
  }
  return {{"type", "input_json_delta"}, {"partial_json", delta}};
}

class MessagesWriter : public ReplyWriter {
public:
  MessagesWriter(const Job &job, bool show_thinking)
      : id_(new_response_id("msg_")), model_(job.spec.model),
        prompt_tokens_(static_cast<int32_t>(job.generation.prompt().size())), split_(job.spec),
        blocks_(show_thinking) {}

  std::string stream_start() override {
    json message = message_json(false);
    message["usage"] = {{"input_tokens", prompt_tokens_}, {"output_tokens", 0}};
    return event("message_start", {{"type", "message_start"}, {"message", std::move(message)}}) +
           event("ping", {{"type", "ping"}});
  }

  std::string stream(size_t, JobEvent &event) override {
    take_end(event);
    std::string out;
    for (const BlockEvent &step : blocks_.feed(split_.next(event), event.finish.has_value()))
      out += block_event(step);
    return out;
  }
  std::string stream_end(const JobUsage &usage) override {
    json usage_json = usage_of(usage);
    return event("message_delta",
                 {{"type", "message_delta"},
                  {"delta", {{"stop_reason", stop_reason()}, {"stop_sequence", stop_sequence()}}},
                  {"usage", std::move(usage_json)}}) +
           event("message_stop", {{"type", "message_stop"}});
  }
  std::string stream_error(const ApiError &error) override {
    return event("error", {{"type", "error"}, {"error", anthropic_error_json(error)}});
  }

  void collect(size_t, JobEvent &event) override {
    take_end(event);
    blocks_.feed(split_.next(event), event.finish.has_value());
  }
  std::string reply(const JobUsage &usage) override {
    json message = message_json(true);
    message["usage"] = usage_of(usage);
    return dump(message);
  }

private:
  static std::string event(const char *name, const json &data) {
    return sse_event(name, dump(data));
  }

  std::string block_event(const BlockEvent &step) const {
    switch (step.what) {
    case BlockEvent::What::open:
      return event("content_block_start", {{"type", "content_block_start"},
                                           {"index", step.index},
                                           {"content_block", block_json(*step.block, true)}});
    case BlockEvent::What::delta:
      return event("content_block_delta", {{"type", "content_block_delta"},
                                           {"index", step.index},
                                           {"delta", delta_json(*step.block, step.delta)}});
    case BlockEvent::What::close:
      break;
    }
    return event("content_block_stop", {{"type", "content_block_stop"}, {"index", step.index}});
  }

  void take_end(const JobEvent &event) {
    if (!event.finish)
      return;
    finish_ = *event.finish;
    stop_string_ = event.stop_string;
  }

  json stop_reason() const {
    if (finish_ == Finish::length)
      return "max_tokens";
    if (!stop_string_.empty())
      return "stop_sequence";
    return blocks_.has_calls() ? "tool_use" : "end_turn";
  }
  json stop_sequence() const { return stop_string_.empty() ? json(nullptr) : json(stop_string_); }

  // Anthropic counts cache reads apart from input_tokens.
  static json usage_of(const JobUsage &usage) {
    return {{"input_tokens", usage.prompt_tokens - usage.cached_tokens},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", usage.cached_tokens},
            {"output_tokens", usage.completion_tokens}};
  }

  // The Message; `whole`: with its content and stop reason.
  json message_json(bool whole) const {
    json content = json::array();
    if (whole)
      for (const ReplyBlock &block : blocks_.blocks()) {
        ReplyBlock trimmed = block;
        if (block.kind == ReplyBlock::Kind::reasoning)
          trim_reasoning(trimmed.text);
        content.push_back(block_json(trimmed, false));
      }
    return {{"id", id_},
            {"type", "message"},
            {"role", "assistant"},
            {"model", model_},
            {"content", std::move(content)},
            {"stop_reason", whole ? stop_reason() : json(nullptr)},
            {"stop_sequence", whole ? stop_sequence() : json(nullptr)}};
  }

  const std::string id_;
  const std::string model_;
  const int32_t prompt_tokens_;
  ReplySplit split_;
  ReplyBlocks blocks_;
  Finish finish_ = Finish::stop;
  std::string stop_string_;
};

} // namespace

ParsedRequest parse_messages_request(std::string_view body, const RequestContext &context) {
  MessagesRequest request = read_messages_request(body, context, MessagesEndpoint::create);
  const bool show_thinking = request.show_thinking;
  return {std::move(request.spec),
          [show_thinking](const JobList &jobs) {
            return std::make_unique<MessagesWriter>(*jobs[0], show_thinking);
          },
          std::nullopt};
}

std::string count_tokens_body(const Engine &engine, const RequestContext &context,
                              std::string_view body) {
  MessagesRequest request = read_messages_request(body, context, MessagesEndpoint::count_tokens);
  // The format changes what may be generated, not the prompt.
  request.spec.generate.format = ReplyFormat();
  try {
    const Generation generation(engine, request.spec.generate);
    return dump({{"input_tokens", generation.prompt().size()}});
  } catch (const InvalidArgument &error) {
    throw bad_request(error.what(), "messages");
  }
}

} // namespace bonsai::server
