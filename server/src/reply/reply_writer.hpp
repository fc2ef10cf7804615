#pragma once
// How one API writes the reply to a request (docs/server.md): Chat
// Completions and legacy Completions, Responses, Anthropic's Messages,
// Ollama's chat and generate. Every API's request becomes the same jobs
// (CompletionSpec); their events come back here and are written in the
// API's own shape, streamed or whole. Used on the I/O thread only.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/api_error.hpp"
#include "schedule/job.hpp"

namespace bonsai::server {

class ReplyWriter {
public:
  virtual ~ReplyWriter() = default;

  // The media type of a streamed answer.
  virtual const char *stream_type() const { return "text/event-stream"; }
  // Streaming: what goes out before the first token (the opening events).
  virtual std::string stream_start() { return {}; }
  // Streaming: what choice `k`'s event adds, framed (never a cancelled or
  // failed event: those end the stream through stream_error or at once).
  virtual std::string stream(size_t k, JobEvent &event) = 0;
  // Streaming: the closing bytes once every choice has ended; `usage` counts
  // the prompt once and every choice's tokens.
  virtual std::string stream_end(const JobUsage &usage) = 0;
  // Streaming: a failure after the head went out; the stream ends after it.
  virtual std::string stream_error(const ApiError &error) = 0;

  // Whole reply: takes choice `k`'s event in.
  virtual void collect(size_t k, JobEvent &event) = 0;
  // Whole reply: its body, once every choice has ended.
  virtual std::string reply(const JobUsage &usage) = 0;
};

using JobList = std::vector<std::shared_ptr<Job>>;

// A request read in one API's shape: what runs, and how its reply is
// written once its jobs are made (their prompts tokenized).
struct ParsedRequest {
  CompletionSpec spec;
  std::function<std::unique_ptr<ReplyWriter>(const JobList &jobs)> writer;
  // Set when the request is answered without generating (Ollama's "load a
  // model" request): this JSON body, and no jobs.
  std::optional<std::string> answer;
};

// Reads one API's request body (on a worker thread); throws ApiError.
using RequestParser = ParsedRequest (*)(std::string_view body, const RequestContext &context);

// One server-sent event: "event: NAME" (when given) and its data line.
std::string sse_event(std::string_view name, std::string_view data);

} // namespace bonsai::server
