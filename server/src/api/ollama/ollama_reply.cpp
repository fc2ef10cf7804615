// The replies of Ollama's /api/chat and /api/generate: NDJSON objects with
// the model's name, created_at and the text (message.content / response),
// its thinking and tool calls; the last one has done, done_reason and the
// durations in nanoseconds.
#include <chrono>

#include <nlohmann/json.hpp>

#include "api/ollama/ollama_api.hpp"
#include "api/ollama/ollama_models.hpp"
#include "api/ollama/ollama_request.hpp"
#include "base/api_errors.hpp"
#include "reply/reply_split.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

std::string line(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

int64_t nanoseconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

class OllamaWriter : public ReplyWriter {
public:
  OllamaWriter(const Job &job, OllamaEndpoint endpoint, bool hide_thinking,
               Clock::time_point started)
      : chat_(endpoint == OllamaEndpoint::chat), hide_thinking_(hide_thinking), started_(started),
        model_(job.spec.model), split_(job.spec) {}

  const char *stream_type() const override { return "application/x-ndjson"; }

  std::string stream(size_t, JobEvent &event) override {
    take_end(event);
    ReplyPiece piece = split_.next(event);
    if (hide_thinking_)
      piece.parts.reasoning.clear();
    if (piece.empty())
      return {};
    for (ParsedToolCall &call : piece.calls)
      calls_.push_back(std::move(call));
    json object = object_json(piece.parts, streamed_calls_, calls_.size());
    streamed_calls_ = calls_.size();
    object["done"] = false;
    return line(object);
  }
  std::string stream_end(const JobUsage &usage) override {
    return line(final_json({}, streamed_calls_, streamed_calls_, usage));
  }
  std::string stream_error(const ApiError &error) override {
    return line({{"error", error.what()}});
  }

  void collect(size_t, JobEvent &event) override {
    take_end(event);
    ReplyPiece piece = split_.next(event);
    reply_.reasoning += piece.parts.reasoning;
    reply_.content += piece.parts.content;
    for (ParsedToolCall &call : piece.calls)
      calls_.push_back(std::move(call));
  }
  std::string reply(const JobUsage &usage) override {
    if (hide_thinking_)
      reply_.reasoning.clear();
    trim_reasoning(reply_.reasoning);
    return line(final_json(reply_, 0, calls_.size(), usage));
  }

private:
  void take_end(const JobEvent &event) {
    if (!event.finish)
      return;
    finish_ = *event.finish;
    times_ = event.times;
  }

  // One object: the model, the time, and the text with the thinking and
  // the calls [first_call, end_call).
  json object_json(const ReplyParts &parts, size_t first_call, size_t end_call) const {
    json object = {{"model", model_}, {"created_at", rfc3339(std::chrono::system_clock::now())}};
    if (chat_) {
      json message = {{"role", "assistant"}, {"content", parts.content}};
      if (!parts.reasoning.empty())
        message["thinking"] = parts.reasoning;
      if (end_call > first_call) {
        json calls = json::array();
        for (size_t i = first_call; i < end_call; ++i)
          calls.push_back({{"id", calls_[i].id},
                           {"function",
                            {{"index", i},
                             {"name", calls_[i].name},
                             {"arguments", json::parse(calls_[i].arguments)}}}});
        message["tool_calls"] = std::move(calls);
      }
      object["message"] = std::move(message);
    } else {
      object["response"] = parts.content;
      if (!parts.reasoning.empty())
        object["thinking"] = parts.reasoning;
    }
    return object;
  }

  // The last object: done, done_reason, and the counts and durations
  // (prompt: from taking a slot to the first token; eval: from the first
  // token to the last; total: from the request's arrival).
  json final_json(const ReplyParts &parts, size_t first_call, size_t end_call,
                  const JobUsage &usage) const {
    json object = object_json(parts, first_call, end_call);
    object["done"] = true;
    object["done_reason"] = finish_ == Finish::length ? "length" : "stop";
    object["total_duration"] = nanoseconds(started_, times_.finished);
    object["load_duration"] = 0; // the model is loaded once, with the server
    object["prompt_eval_count"] = usage.prompt_tokens;
    object["prompt_eval_duration"] = nanoseconds(times_.admitted, times_.first_token);
    object["eval_count"] = usage.completion_tokens;
    object["eval_duration"] = nanoseconds(times_.first_token, times_.finished);
    return object;
  }

  const bool chat_;
  const bool hide_thinking_;
  const Clock::time_point started_;
  const std::string model_;
  ReplySplit split_;
  ReplyParts reply_;                  // a whole reply, collected
  std::vector<ParsedToolCall> calls_; // every call so far
  size_t streamed_calls_ = 0;         // of calls_, already sent
  Finish finish_ = Finish::stop;
  JobTimes times_;
};

// An empty prompt or message list: Ollama's "load the model" request.
std::string load_answer(const OllamaRequest &request, OllamaEndpoint endpoint) {
  json object = {{"model", request.spec.model},
                 {"created_at", rfc3339(std::chrono::system_clock::now())},
                 {"done", true},
                 {"done_reason", "load"}};
  if (endpoint == OllamaEndpoint::chat)
    object["message"] = {{"role", "assistant"}, {"content", ""}};
  else
    object["response"] = "";
  return line(object);
}

ParsedRequest parse(std::string_view body, const RequestContext &context, OllamaEndpoint endpoint) {
  const Clock::time_point started = Clock::now();
  OllamaRequest request = read_ollama_request(body, context, endpoint);
  ParsedRequest out;
  if (request.load_only) {
    out.answer = load_answer(request, endpoint);
    return out;
  }
  out.spec = std::move(request.spec);
  out.writer = [endpoint, hide = request.hide_thinking, started](const JobList &jobs) {
    return std::make_unique<OllamaWriter>(*jobs[0], endpoint, hide, started);
  };
  return out;
}

} // namespace

ParsedRequest parse_ollama_chat(std::string_view body, const RequestContext &context) {
  return parse(body, context, OllamaEndpoint::chat);
}

ParsedRequest parse_ollama_generate(std::string_view body, const RequestContext &context) {
  return parse(body, context, OllamaEndpoint::generate);
}

} // namespace bonsai::server
