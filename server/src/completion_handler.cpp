// POST /v1/chat/completions and /v1/completions: the body is parsed and the
// prompt tokenized on a worker thread; back on the I/O thread the job is
// queued, and its events are answered as a whole reply or streamed as
// server-sent events. A client that goes away cancels its job at once.
#include <algorithm>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "bonsai/generation.hpp"
#include "error_response.hpp"
#include "openai_response.hpp"
#include "reasoning_split.hpp"
#include "server_impl.hpp"
#include "server_log.hpp"
#include "tool_calls.hpp"

namespace bonsai::server {
namespace {

using json = nlohmann::json;

// Rejects a prompt that leaves no room to generate before it takes a slot.
// A larger max_tokens than the context has left is not an error: the reply
// ends at the context's end with finish_reason "length" (clients that
// always ask for many tokens work, as with llama-server).
void check_context(const CompletionSpec &spec, const Generation &generation, int32_t n_ctx) {
  const auto prompt = static_cast<int64_t>(generation.prompt().size());
  if (prompt + 1 > n_ctx)
    throw bad_request(fmt::format("This model's context window is {} tokens per request; the "
                                  "prompt holds {}, which leaves no room to generate",
                                  n_ctx, prompt),
                      spec.endpoint == Endpoint::chat ? "messages" : "prompt",
                      "context_length_exceeded");
}

// Parses the request and tokenizes its prompt (worker thread).
std::shared_ptr<Job> make_job(const Server::Impl &impl, Endpoint endpoint, const std::string &body,
                              uint64_t tenant) {
  CompletionSpec spec = parse_completion_request(endpoint, body, impl.request_context);
  std::optional<Generation> generation;
  try {
    generation.emplace(*impl.engine, spec.generate);
  } catch (const FormatError &error) {
    throw bad_request(error.what(), spec.format_param);
  } catch (const InvalidArgument &error) {
    throw bad_request(error.what(), endpoint == Endpoint::chat ? "messages" : "prompt");
  }
  check_context(spec, *generation, impl.scheduler->n_ctx());
  // A constrained reply is finished within the context's room.
  generation->set_token_room(impl.scheduler->n_ctx() -
                             static_cast<int32_t>(generation->prompt().size()));
  if (endpoint == Endpoint::chat && spec.reasoning_format != ReasoningFormat::none)
    spec.reasoning_open = generation->prompt_opens_reasoning();
  return std::make_shared<Job>(std::move(spec), std::move(*generation), tenant);
}

std::string sse(const std::string &data) {
  return "data: " + data + "\n\n";
}

ApiError job_error(const JobEvent &event) {
  return ApiError(500, "server_error", "The backend failed: " + event.error);
}

// One queued job and the exchange it answers (I/O thread). The exchange
// holds it; the job's waker reaches it through a weak pointer, so a client
// that leaves drops it, and dropping it cancels the job.
class CompletionRun : public std::enable_shared_from_this<CompletionRun> {
public:
  CompletionRun(const std::shared_ptr<Exchange> &exchange, std::shared_ptr<Job> job)
      : exchange_(exchange), job_(std::move(job)), header_(new_response_header(job_->spec)) {
    if (job_->spec.endpoint == Endpoint::chat &&
        job_->spec.reasoning_format != ReasoningFormat::none)
      split_.emplace(job_->spec.reasoning_open);
    if (job_->spec.parse_tool_calls)
      tools_.emplace();
  }
  ~CompletionRun() {
    if (!job_->finished())
      job_->cancelled.store(true);
  }

  void start(Exchange &exchange) {
    exchange.hold(shared_from_this());
    exchange.on_client_gone([job = job_] { job->cancelled.store(true); });
    if (job_->spec.stream)
      exchange.begin_stream(
          HttpResponse(200, "", "text/event-stream").header("Cache-Control", "no-cache"));
    job_->set_waker([self = weak_from_this(), io = exchange.executor()] {
      boost::asio::post(io, [self] {
        if (auto run = self.lock())
          run->pump();
      });
    });
  }

private:
  void pump() {
    const std::shared_ptr<Exchange> exchange = exchange_.lock();
    if (!exchange || exchange->over())
      return;
    while (std::optional<JobEvent> event = job_->try_pop()) {
      if (job_->spec.stream ? !stream(*exchange, *event) : !collect(*exchange, *event))
        return;
    }
  }

  // False once the answer is complete.
  bool stream(Exchange &exchange, JobEvent &event) {
    if (event.finish == Finish::cancelled) {
      exchange.end_stream(); // the server is shutting down: no [DONE]
      return false;
    }
    if (event.finish == Finish::error) {
      exchange.write(sse(error_body(job_error(event))) + sse("[DONE]"));
      exchange.end_stream();
      return false;
    }
    const Piece piece = next_piece(event);
    take_logprobs(event);
    if (piece.calls.empty()) {
      if (!piece.parts.empty() || event.finish) {
        const std::optional<json> lp = pending_logprobs();
        exchange.write(sse(chunk_body(header_, piece.parts, event.finish, first_chunk_,
                                      streamed_calls_ > 0, lp ? &*lp : nullptr)));
        first_chunk_ = false;
      }
    } else {
      if (!piece.parts.empty()) {
        const std::optional<json> lp = pending_logprobs();
        exchange.write(sse(chunk_body(header_, piece.parts, std::nullopt, first_chunk_, false,
                                      lp ? &*lp : nullptr)));
        first_chunk_ = false;
      }
      for (const ParsedToolCall &call : piece.calls) {
        for (const std::string &body :
             tool_call_chunk_bodies(header_, call, streamed_calls_++, first_chunk_))
          exchange.write(sse(body));
        first_chunk_ = false;
      }
      if (event.finish) {
        const std::optional<json> lp = pending_logprobs();
        exchange.write(
            sse(chunk_body(header_, {}, event.finish, false, true, lp ? &*lp : nullptr)));
      }
    }
    if (!event.finish)
      return true;
    if (job_->spec.include_usage)
      exchange.write(sse(usage_chunk_body(header_, event.usage)));
    exchange.write(sse("[DONE]"));
    exchange.end_stream();
    return false;
  }

  bool collect(Exchange &exchange, JobEvent &event) {
    Piece piece = next_piece(event);
    take_logprobs(event);
    reply_.reasoning += piece.parts.reasoning;
    reply_.content += piece.parts.content;
    for (ParsedToolCall &call : piece.calls)
      calls_.push_back(std::move(call));
    if (!event.finish)
      return true;
    trim_reasoning(reply_.reasoning);
    if (event.finish == Finish::cancelled)
      exchange.respond(error_response(503, "server_error", "The request was cancelled"));
    else if (event.finish == Finish::error)
      exchange.respond(error_response(job_error(event)));
    else {
      const std::optional<json> lp = pending_logprobs();
      exchange.respond(HttpResponse(200, completion_body(header_, reply_, calls_, *event.finish,
                                                         event.usage, lp ? &*lp : nullptr)));
    }
    return false;
  }

  // With logprobs: the event's tokens wait until a chunk (or the reply)
  // carries them.
  void take_logprobs(JobEvent &event) {
    for (StepLogprobs &entry : event.logprobs)
      logprobs_.push_back(std::move(entry));
  }
  // The waiting tokens' logprobs, now sent (nullopt without logprobs; an
  // empty list when none waits).
  std::optional<json> pending_logprobs() {
    if (!job_->spec.generate.logprobs)
      return std::nullopt;
    json out = logprobs_json(job_->spec.endpoint, logprobs_, logprob_offset_);
    logprobs_.clear();
    return out;
  }

  struct Piece {
    ReplyParts parts;
    std::vector<ParsedToolCall> calls;
  };

  // The event's text as reasoning, content and tool calls.
  Piece next_piece(const JobEvent &event) {
    Piece piece{split(event), {}};
    if (!tools_)
      return piece;
    ContentPiece found = tools_->feed(piece.parts.content);
    if (event.finish) {
      ContentPiece rest = tools_->finish();
      found.content += rest.content;
      for (ParsedToolCall &call : rest.calls)
        found.calls.push_back(std::move(call));
    }
    piece.parts.content = std::move(found.content);
    for (ParsedToolCall &call : found.calls)
      if (job_->spec.parallel_tool_calls || kept_calls_++ == 0) // false: the first call only
        piece.calls.push_back(std::move(call));
    return piece;
  }

  // The event's text as reasoning and content (all content without a split).
  ReplyParts split(const JobEvent &event) {
    if (!split_)
      return {{}, event.text};
    ReplyParts parts = split_->feed(event.text);
    if (event.finish) {
      const ReplyParts rest = split_->finish();
      parts.reasoning += rest.reasoning;
      parts.content += rest.content;
    }
    return parts;
  }

  // A whole reply's reasoning without the blank lines around it.
  static void trim_reasoning(std::string &text) {
    const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
    while (!text.empty() && space(text.back()))
      text.pop_back();
    const auto first = std::find_if_not(text.begin(), text.end(), space);
    text.erase(text.begin(), first);
  }

  std::weak_ptr<Exchange> exchange_;
  const std::shared_ptr<Job> job_;
  const ResponseHeader header_;
  bool first_chunk_ = true;
  std::optional<ReasoningSplit> split_; // chat, unless reasoning stays inline
  std::optional<ToolCallSplit> tools_;  // chat with tools
  ReplyParts reply_;                    // a whole reply, collected
  std::vector<ParsedToolCall> calls_;   // its calls
  size_t streamed_calls_ = 0;           // calls streamed so far (the next one's index)
  size_t kept_calls_ = 0;               // calls found so far (parallel_tool_calls false)
  std::vector<StepLogprobs> logprobs_;  // tokens whose logprobs are not sent yet
  size_t logprob_offset_ = 0;           // bytes of the reply before them (completions)
};

// Back on the I/O thread with the parsed job (or why there is none).
void queue_job(Server::Impl &impl, Exchange &exchange, std::shared_ptr<Job> job) {
  if (exchange.over())
    return; // the client left while its request was parsed
  Scheduler *scheduler = impl.ready_scheduler();
  const Scheduler::Submitted submitted =
      scheduler != nullptr ? scheduler->submit(job) : Scheduler::Submitted::stopping;
  switch (submitted) {
  case Scheduler::Submitted::queued:
    std::make_shared<CompletionRun>(exchange.shared_from_this(), std::move(job))->start(exchange);
    return;
  case Scheduler::Submitted::queue_full:
    return exchange.respond(
        error_response(ApiError(429, "rate_limit_error",
                                fmt::format("The server is busy: {} requests are already waiting",
                                            impl.options.max_queue),
                                {}, "queue_full"))
            .header("Retry-After", "1"));
  case Scheduler::Submitted::stopping:
    return exchange.respond(error_response(503, "server_error", "The server is shutting down"));
  }
}

} // namespace

void run_on_worker(Server::Impl &impl, const std::shared_ptr<Exchange> &exchange, WorkerTask work) {
  boost::asio::post(impl.workers, [exchange, work = std::move(work)] {
    std::function<void()> then;
    try {
      then = work();
    } catch (const ApiError &error) {
      then = [exchange, response = error_response(error)]() mutable {
        exchange->respond(std::move(response));
      };
    } catch (const std::exception &error) {
      log_at(LogLevel::error, "a request failed: {}", error.what());
      then = [exchange,
              response = error_response(500, "server_error",
                                        std::string("Internal error: ") + error.what())]() mutable {
        exchange->respond(std::move(response));
      };
    }
    // The body is parsed: give its memory and its share of the budget back.
    HttpRequest &request = exchange->request();
    std::string().swap(request.message.body());
    request.body_reservation.reset();
    exchange->post(std::move(then));
  });
}

void start_completion(Server::Impl &impl, const std::shared_ptr<Exchange> &exchange,
                      Endpoint endpoint, uint64_t tenant) {
  if (impl.ready_scheduler() == nullptr)
    return exchange->respond(error_response(503, "server_error",
                                            impl.state.load() == ServerState::loading
                                                ? "The model is still loading"
                                                : "The server is not serving"));
  run_on_worker(impl, exchange, [&impl, exchange, endpoint, tenant] {
    // The scheduler was seen ready; once set it lives as long as the server.
    std::shared_ptr<Job> job = make_job(impl, endpoint, exchange->request().message.body(), tenant);
    return std::function<void()>([&impl, exchange, job] { queue_job(impl, *exchange, job); });
  });
}

} // namespace bonsai::server
