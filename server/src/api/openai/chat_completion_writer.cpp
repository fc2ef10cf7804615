#include "api/openai/chat_completion_writer.hpp"

#include "api/openai/choice_assembly.hpp"
#include "api/openai/openai_request.hpp"
#include "api/openai/openai_response.hpp"
#include "base/api_errors.hpp"

namespace bonsai::server {
namespace {

std::string sse(const std::string &data) {
  return sse_event({}, data);
}

class ChatCompletionWriter : public ReplyWriter {
public:
  explicit ChatCompletionWriter(const JobList &jobs)
      : header_(new_response_header(jobs[0]->spec)), include_usage_(jobs[0]->spec.include_usage),
        finishes_(jobs.size(), Finish::stop) {
    for (size_t k = 0; k < jobs.size(); ++k)
      choices_.push_back(
          std::make_unique<ChoiceAssembly>(jobs[k]->spec, header_, static_cast<int32_t>(k)));
  }

  std::string stream(size_t k, JobEvent &event) override {
    std::string out;
    for (const std::string &body : choices_[k]->stream(event))
      out += sse(body);
    return out;
  }
  std::string stream_end(const JobUsage &usage) override {
    return (include_usage_ ? sse(usage_chunk_body(header_, usage)) : std::string()) + sse("[DONE]");
  }
  std::string stream_error(const ApiError &error) override {
    return sse(error_body(error)) + sse("[DONE]");
  }

  void collect(size_t k, JobEvent &event) override {
    choices_[k]->collect(event);
    if (event.finish)
      finishes_[k] = *event.finish;
  }
  std::string reply(const JobUsage &usage) override {
    std::vector<nlohmann::json> choices;
    for (size_t k = 0; k < choices_.size(); ++k)
      choices.push_back(choices_[k]->choice(finishes_[k]));
    return completion_body(header_, choices, usage);
  }

private:
  const ResponseHeader header_;
  const bool include_usage_;
  std::vector<std::unique_ptr<ChoiceAssembly>> choices_; // one per job, in index order
  std::vector<Finish> finishes_;
};

ParsedRequest parsed(Endpoint endpoint, std::string_view body, const RequestContext &context) {
  return {parse_completion_request(endpoint, body, context),
          [](const JobList &jobs) { return std::make_unique<ChatCompletionWriter>(jobs); },
          std::nullopt};
}

} // namespace

ParsedRequest parse_chat_completion(std::string_view body, const RequestContext &context) {
  return parsed(Endpoint::chat, body, context);
}

ParsedRequest parse_text_completion(std::string_view body, const RequestContext &context) {
  return parsed(Endpoint::completion, body, context);
}

} // namespace bonsai::server
