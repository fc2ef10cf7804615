// The reply to POST /v1/responses: output items (reasoning, message,
// function_call) built from the reply's blocks, whole or as typed events.
#include <chrono>

#include <nlohmann/json.hpp>

#include "api/responses/responses_api.hpp"
#include "api/responses/responses_request.hpp"
#include "base/api_errors.hpp"
#include "reply/reply_blocks.hpp"
#include "reply/response_ids.hpp"
#include "reply/token_logprobs.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

std::string dump(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The part a reasoning or message item holds (a reasoning item's as a
// summary part when `summary`).
json part_json(const ReplyBlock &block, const std::string &text, bool summary,
               json logprobs = json::array()) {
  if (block.kind == ReplyBlock::Kind::reasoning)
    return {{"type", summary ? "summary_text" : "reasoning_text"}, {"text", text}};
  return {{"type", "output_text"},
          {"text", text},
          {"annotations", json::array()},
          {"logprobs", std::move(logprobs)}};
}

class ResponsesWriter : public ReplyWriter {
public:
  ResponsesWriter(const Job &job, const ResponsesRequest &request)
      : id_(new_response_id("resp_")), created_(unix_now()), model_(job.spec.model),
        echo_(request.echo), summary_(request.reasoning_summary), namespaced_(request.namespaced),
        split_(job.spec), blocks_(true) {}

  std::string stream_start() override {
    const json response = response_json("in_progress", nullptr);
    std::string out = event("response.created", {{"response", response}}); // numbered first
    return out + event("response.in_progress", {{"response", response}});
  }

  std::string stream(size_t, JobEvent &event) override {
    if (event.finish)
      finish_ = *event.finish;
    const ReplyPiece piece = split_.next(event);
    take_logprobs(event, piece);
    std::string out;
    for (const BlockEvent &step : blocks_.feed(piece, event.finish.has_value()))
      out += item_events(step);
    return out;
  }
  std::string stream_end(const JobUsage &usage) override {
    const char *status = this->status(); // the event is named after it
    return event(std::string("response.") + status, {{"response", response_json(status, &usage)}});
  }
  std::string stream_error(const ApiError &error) override {
    json response = response_json("failed", nullptr);
    response["error"] = {{"code", "server_error"}, {"message", error.what()}};
    return event("response.failed", {{"response", std::move(response)}});
  }

  void collect(size_t, JobEvent &event) override {
    if (event.finish)
      finish_ = *event.finish;
    const ReplyPiece piece = split_.next(event);
    take_logprobs(event, piece);
    blocks_.feed(piece, event.finish.has_value());
  }
  std::string reply(const JobUsage &usage) override {
    return dump(response_json(status(), &usage));
  }

private:
  // With top_logprobs: the tokens of an event that wrote the answer's text
  // belong to it (the think block's tokens are not output_text's).
  void take_logprobs(JobEvent &event, const ReplyPiece &piece) {
    if (piece.parts.content.empty())
      return;
    for (StepLogprobs &entry : event.logprobs)
      pending_logprobs_.push_back(std::move(entry));
  }
  // The logprobs of the text written since the last call, moved into the
  // message's list too.
  json flush_logprobs() {
    json list = token_logprob_list(pending_logprobs_);
    for (const json &entry : list)
      message_logprobs_.push_back(entry);
    pending_logprobs_.clear();
    return list;
  }

  const char *status() const { return finish_ == Finish::length ? "incomplete" : "completed"; }

  // One typed event: "event: TYPE" and its data with type and sequence_number.
  std::string event(const std::string &type, json data) {
    data["type"] = type;
    data["sequence_number"] = sequence_++;
    return sse_event(type, dump(data));
  }

  // The item a block is, with its text so far; `done`: finished.
  json item_json(size_t index, bool done) {
    const ReplyBlock &block = blocks_.blocks()[index];
    const std::string &id = item_id(index);
    const char *status =
        done ? (finish_ == Finish::length ? "incomplete" : "completed") : "in_progress";
    switch (block.kind) {
    case ReplyBlock::Kind::reasoning: {
      std::string text = block.text;
      if (done)
        trim_reasoning(text);
      const json parts = done ? json::array({part_json(block, text, summary_)}) : json::array();
      return {{"type", "reasoning"},
              {"id", id},
              {"summary", summary_ ? parts : json::array()},
              {"content", summary_ ? json::array() : parts}};
    }
    case ReplyBlock::Kind::text:
      if (done && !pending_logprobs_.empty())
        flush_logprobs();
      return {
          {"type", "message"},
          {"id", id},
          {"status", status},
          {"role", "assistant"},
          {"content", done ? json::array({part_json(block, block.text, false, message_logprobs_)})
                           : json::array()}};
    case ReplyBlock::Kind::tool_call:
      break;
    }
    json call = {{"type", "function_call"},
                 {"id", id},
                 {"call_id", block.call.id},
                 {"name", block.call.name},
                 {"arguments", done ? block.call.arguments : ""},
                 {"status", status}};
    // A namespace's function: its name and namespace apart, as offered.
    if (const auto found = namespaced_.find(block.call.name); found != namespaced_.end()) {
      call["namespace"] = found->second.first;
      call["name"] = found->second.second;
    }
    return call;
  }

  // The events of one block step: an item and its part opened, a delta, or
  // the text, the part and the item done.
  std::string item_events(const BlockEvent &step) {
    const ReplyBlock &block = *step.block;
    const bool call = block.kind == ReplyBlock::Kind::tool_call;
    const bool reasoning = block.kind == ReplyBlock::Kind::reasoning;
    const json where = {{"item_id", item_id(step.index)}, {"output_index", step.index}};
    json part_where = where;
    part_where["content_index"] = 0;
    const auto with = [](json base, json more) {
      base.update(more);
      return base;
    };
    // A reasoning item given as a summary streams its summary part.
    const bool summary = reasoning && summary_;
    json summary_where = where;
    summary_where["summary_index"] = 0;
    switch (step.what) {
    case BlockEvent::What::open: {
      std::string out =
          event("response.output_item.added",
                {{"output_index", step.index}, {"item", item_json(step.index, false)}});
      if (summary)
        out += event("response.reasoning_summary_part.added",
                     with(summary_where, {{"part", part_json(block, "", true)}}));
      else if (!call)
        out += event("response.content_part.added",
                     with(part_where, {{"part", part_json(block, "", false)}}));
      return out;
    }
    case BlockEvent::What::delta:
      if (call)
        return event("response.function_call_arguments.delta",
                     with(where, {{"delta", step.delta}}));
      if (summary)
        return event("response.reasoning_summary_text.delta",
                     with(summary_where, {{"delta", step.delta}}));
      if (reasoning)
        return event("response.reasoning_text.delta", with(part_where, {{"delta", step.delta}}));
      return event("response.output_text.delta",
                   with(part_where, {{"delta", step.delta}, {"logprobs", flush_logprobs()}}));
    case BlockEvent::What::close:
      break;
    }
    const json item = item_json(step.index, true);
    std::string out;
    if (call) {
      out += event("response.function_call_arguments.done",
                   with(where, {{"name", item.at("name")}, {"arguments", block.call.arguments}}));
    } else if (summary) {
      const json part = item.at("summary").at(0);
      out += event("response.reasoning_summary_text.done",
                   with(summary_where, {{"text", part.at("text")}}));
      out += event("response.reasoning_summary_part.done", with(summary_where, {{"part", part}}));
    } else {
      const json part = item.at("content").at(0);
      out += event(reasoning ? "response.reasoning_text.done" : "response.output_text.done",
                   with(part_where, reasoning ? json{{"text", part.at("text")}}
                                              : json{{"text", part.at("text")},
                                                     {"logprobs", part.at("logprobs")}}));
      out += event("response.content_part.done", with(part_where, {{"part", part}}));
    }
    return out + event("response.output_item.done", {{"output_index", step.index}, {"item", item}});
  }

  const std::string &item_id(size_t index) {
    while (item_ids_.size() <= index) {
      const ReplyBlock &block = blocks_.blocks()[item_ids_.size()];
      item_ids_.push_back(new_response_id(block.kind == ReplyBlock::Kind::reasoning ? "rs_"
                                          : block.kind == ReplyBlock::Kind::text    ? "msg_"
                                                                                    : "fc_"));
    }
    return item_ids_[index];
  }

  // The Response object; `usage` null while it is in progress.
  json response_json(const char *status, const JobUsage *usage) {
    json output = json::array();
    std::string output_text;
    if (usage != nullptr)
      for (size_t i = 0; i < blocks_.blocks().size(); ++i) {
        output.push_back(item_json(i, true));
        if (blocks_.blocks()[i].kind == ReplyBlock::Kind::text)
          output_text += blocks_.blocks()[i].text;
      }
    json response = echo_;
    response.update({{"id", id_},
                     {"object", "response"},
                     {"created_at", created_},
                     {"status", status},
                     {"error", nullptr},
                     {"incomplete_details", std::string_view(status) == "incomplete"
                                                ? json{{"reason", "max_output_tokens"}}
                                                : json(nullptr)},
                     {"model", model_},
                     {"output", std::move(output)},
                     {"output_text", std::move(output_text)},
                     {"previous_response_id", nullptr},
                     {"store", false},
                     {"usage", nullptr}});
    if (usage != nullptr)
      response["usage"] = {{"input_tokens", usage->prompt_tokens},
                           {"input_tokens_details", {{"cached_tokens", usage->cached_tokens}}},
                           {"output_tokens", usage->completion_tokens},
                           // The think block's tokens are not counted apart.
                           {"output_tokens_details", {{"reasoning_tokens", 0}}},
                           {"total_tokens", usage->prompt_tokens + usage->completion_tokens}};
    return response;
  }

  const std::string id_;
  const int64_t created_;
  const std::string model_;
  const json echo_;
  const bool summary_;               // reasoning as summary parts
  const NamespacedNames namespaced_; // flat name -> (namespace, name)
  ReplySplit split_;
  ReplyBlocks blocks_;
  std::vector<std::string> item_ids_;          // one per block
  std::vector<StepLogprobs> pending_logprobs_; // the text's tokens not yet sent
  json message_logprobs_ = json::array();      // every token of the answer's text
  int64_t sequence_ = 0;
  Finish finish_ = Finish::stop;
};

} // namespace

ParsedRequest parse_responses_request(std::string_view body, const RequestContext &context) {
  ResponsesRequest request = read_responses_request(body, context);
  CompletionSpec spec = std::move(request.spec);
  return {std::move(spec),
          [request = std::move(request)](const JobList &jobs) {
            return std::make_unique<ResponsesWriter>(*jobs[0], request);
          },
          std::nullopt};
}

} // namespace bonsai::server
