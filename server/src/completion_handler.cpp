// Every endpoint that generates (Chat Completions, Completions, Responses,
// Messages, Ollama's chat and generate): the body is parsed into the internal
// request (CompletionSpec) and the prompt tokenized on a worker thread; back
// on the I/O thread the jobs are queued, and their events are answered
// through the API's ReplyWriter, as a whole reply or streamed. A client that
// goes away cancels its jobs at once.
#include <algorithm>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "base/api_errors.hpp"
#include "base/server_log.hpp"
#include "bonsai/generation.hpp"
#include "http/error_response.hpp"
#include "reply/reply_writer.hpp"
#include "server_impl.hpp"

namespace bonsai::server {
namespace {

// Rejects a prompt that leaves no room to generate before it takes a slot.
// A larger max_tokens than the context has left is not an error: the reply
// ends at the context's end with finish_reason "length" (clients that
// always ask for many tokens work, as with llama-server).
// Anthropic's clients (Claude Code among them) read the overflow from the
// message's own words, "prompt is too long: N tokens > M maximum", to know
// to compact the conversation: that API gets them.
void check_context(const CompletionSpec &spec, const Generation &generation, int32_t n_ctx,
                   ErrorShape shape) {
  const auto prompt = static_cast<int64_t>(generation.prompt().size());
  if (prompt + 1 <= n_ctx)
    return;
  if (shape == ErrorShape::anthropic)
    throw bad_request(fmt::format("prompt is too long: {} tokens > {} maximum", prompt, n_ctx - 1),
                      spec.prompt_param, "context_length_exceeded");
  throw bad_request(fmt::format("This model's context window is {} tokens per request; the "
                                "prompt holds {}, which leaves no room to generate",
                                n_ctx, prompt),
                    spec.prompt_param, "context_length_exceeded");
}

// Tokenizes the request's prompt (worker thread): one job per choice (`n`),
// the k-th with seed + k when a seed is given.
JobList make_jobs(const Server::Impl &impl, const CompletionSpec &spec, uint64_t tenant,
                  ErrorShape shape) {
  const int32_t slot_ctx = impl.scheduler->n_ctx();
  const int32_t n_ctx = spec.n_ctx > 0 ? std::min(spec.n_ctx, slot_ctx) : slot_ctx;
  JobList jobs;
  for (int32_t k = 0; k < spec.n; ++k) {
    CompletionSpec choice = spec;
    if (const int32_t cap = impl.request_context.n_predict; cap >= 0) {
      int32_t &n_predict = choice.generate.n_predict;
      n_predict = n_predict < 0 ? cap : std::min(n_predict, cap);
    }
    if (choice.generate.sampling.seed)
      *choice.generate.sampling.seed += static_cast<uint64_t>(k);
    std::optional<Generation> generation;
    try {
      generation.emplace(*impl.engine, choice.generate);
    } catch (const FormatError &error) {
      throw bad_request(error.what(), choice.format_param);
    } catch (const InvalidArgument &error) {
      throw bad_request(error.what(), choice.prompt_param);
    }
    check_context(choice, *generation, n_ctx, shape);
    // A constrained reply is finished within the context's room.
    generation->set_token_room(n_ctx - static_cast<int32_t>(generation->prompt().size()));
    if (choice.endpoint == Endpoint::chat && choice.reasoning_format != ReasoningFormat::none)
      choice.reasoning_open = generation->prompt_opens_reasoning();
    jobs.push_back(std::make_shared<Job>(std::move(choice), std::move(*generation), tenant));
  }
  return jobs;
}

ApiError job_error(const JobEvent &event) {
  return ApiError(500, "server_error", "The backend failed: " + event.error);
}

// The queued jobs of one request (one per choice), the exchange they answer
// and the writer of its API (I/O thread). The exchange holds it; the jobs'
// wakers reach it through a weak pointer, so a client that leaves drops it,
// and dropping it cancels the jobs.
class CompletionRun : public std::enable_shared_from_this<CompletionRun> {
public:
  CompletionRun(const std::shared_ptr<Exchange> &exchange, JobList jobs,
                std::shared_ptr<ReplyWriter> writer, NoteHeaders notes)
      : exchange_(exchange), path_(exchange->request().path), jobs_(std::move(jobs)),
        writer_(std::move(writer)), notes_(std::move(notes)) {}
  ~CompletionRun() { cancel_all(); }

  void start(Exchange &exchange) {
    exchange.hold(shared_from_this());
    exchange.on_client_gone([jobs = jobs_] {
      for (const auto &job : jobs)
        job->cancelled.store(true);
    });
    if (stream()) {
      exchange.begin_stream(with_notes(
          HttpResponse(200, "", writer_->stream_type()).header("Cache-Control", "no-cache"),
          notes_));
      if (std::string opening = writer_->stream_start(); !opening.empty())
        exchange.write(std::move(opening));
    }
    for (const auto &job : jobs_)
      job->set_waker([self = weak_from_this(), io = exchange.executor()] {
        boost::asio::post(io, [self] {
          if (auto run = self.lock())
            run->pump();
        });
      });
  }

private:
  bool stream() const { return jobs_[0]->spec.stream; }

  void cancel_all() {
    for (const auto &job : jobs_)
      if (!job->finished())
        job->cancelled.store(true);
  }

  void pump() {
    const std::shared_ptr<Exchange> exchange = exchange_.lock();
    if (!exchange || exchange->over())
      return;
    for (size_t k = 0; k < jobs_.size(); ++k)
      while (std::optional<JobEvent> event = jobs_[k]->try_pop())
        if (!(stream() ? stream_event(*exchange, k, *event) : collect(*exchange, k, *event)))
          return;
  }

  // Counts a choice's last event; true once every choice has finished.
  bool last_of_all(size_t k, const JobEvent &event) {
    if (k == 0) {
      usage_.prompt_tokens = event.usage.prompt_tokens;
      usage_.cached_tokens = event.usage.cached_tokens;
    }
    usage_.completion_tokens += event.usage.completion_tokens;
    return ++finished_ == jobs_.size();
  }

  // False once the answer is complete.
  bool stream_event(Exchange &exchange, size_t k, JobEvent &event) {
    if (event.finish == Finish::cancelled) {
      cancel_all();
      exchange.end_stream(); // the server is shutting down: no closing events
      return false;
    }
    if (event.finish == Finish::error) {
      cancel_all();
      exchange.write(writer_->stream_error(job_error(event)));
      exchange.end_stream();
      return false;
    }
    if (std::string piece = writer_->stream(k, event); !piece.empty())
      exchange.write(std::move(piece));
    if (!event.finish || !last_of_all(k, event))
      return true;
    exchange.write(writer_->stream_end(usage_));
    exchange.end_stream();
    return false;
  }

  bool collect(Exchange &exchange, size_t k, JobEvent &event) {
    if (event.finish == Finish::cancelled || event.finish == Finish::error) {
      cancel_all();
      // Cancelled here means stopped by a shutdown: another replica can run it.
      exchange.respond(event.finish == Finish::cancelled
                           ? error_response(503, "server_error", "The request was cancelled", path_)
                                 .header("Retry-After", "1")
                           : error_response(job_error(event), path_));
      return false;
    }
    writer_->collect(k, event);
    if (!event.finish || !last_of_all(k, event))
      return true;
    exchange.respond(with_notes(HttpResponse(200, writer_->reply(usage_)), notes_));
    return false;
  }

  std::weak_ptr<Exchange> exchange_;
  const std::string path_; // of the request: the shape of its errors
  const JobList jobs_;
  const std::shared_ptr<ReplyWriter> writer_;
  const NoteHeaders notes_; // the compatibility notes of the request's reading
  size_t finished_ = 0;     // choices whose last event is in
  JobUsage usage_;          // the prompt once, the completions summed
};

// Back on the I/O thread with the parsed jobs: all are queued, or none.
void queue_jobs(Server::Impl &impl, Exchange &exchange, JobList jobs,
                std::shared_ptr<ReplyWriter> writer, NoteHeaders notes) {
  if (exchange.over())
    return; // the client left while its request was parsed
  const std::string &path = exchange.request().path;
  Scheduler *scheduler = impl.ready_scheduler();
  Scheduler::Submitted submitted = Scheduler::Submitted::stopping;
  for (size_t k = 0; k < jobs.size(); ++k) {
    submitted = scheduler != nullptr ? scheduler->submit(jobs[k]) : Scheduler::Submitted::stopping;
    if (submitted != Scheduler::Submitted::queued) {
      for (size_t queued = 0; queued < k; ++queued)
        jobs[queued]->cancelled.store(true);
      break;
    }
  }
  switch (submitted) {
  case Scheduler::Submitted::queued:
    std::make_shared<CompletionRun>(exchange.shared_from_this(), std::move(jobs), std::move(writer),
                                    std::move(notes))
        ->start(exchange);
    return;
  case Scheduler::Submitted::queue_full:
    return exchange.respond(
        error_response(ApiError(429, "rate_limit_error",
                                fmt::format("The server is busy: {} requests are already waiting",
                                            impl.options.max_queue),
                                {}, "queue_full"),
                       path)
            .header("Retry-After", "1"));
  case Scheduler::Submitted::stopping:
    // Another replica can take it: a balancer retries a 503 that says when.
    return exchange.respond(error_response(503, "server_error", "The server is shutting down", path)
                                .header("Retry-After", "1"));
  }
}

} // namespace

void run_on_worker(Server::Impl &impl, const std::shared_ptr<Exchange> &exchange, WorkerTask work) {
  boost::asio::post(impl.workers, [exchange, work = std::move(work)] {
    const std::string &path = exchange->request().path;
    std::function<void()> then;
    try {
      then = work();
    } catch (const ApiError &error) {
      then = [exchange, response = error_response(error, path)]() mutable {
        exchange->respond(std::move(response));
      };
    } catch (const std::exception &error) {
      log_at(LogLevel::error, "a request failed: {}", error.what());
      then = [exchange, response = error_response(
                            500, "server_error", std::string("Internal error: ") + error.what(),
                            path)]() mutable { exchange->respond(std::move(response)); };
    }
    // The body is parsed: give its memory and its share of the budget back.
    HttpRequest &request = exchange->request();
    std::string().swap(request.message.body());
    request.body_reservation.reset();
    exchange->post(std::move(then));
  });
}

std::optional<HttpResponse> not_serving(const Server::Impl &impl, const std::string &path) {
  if (impl.ready_scheduler() != nullptr)
    return std::nullopt;
  return error_response(503, "server_error",
                        impl.state.load() == ServerState::loading ? "The model is still loading"
                                                                  : "The server is not serving",
                        path)
      .header("Retry-After", "1");
}

void start_generation(Server::Impl &impl, const std::shared_ptr<Exchange> &exchange,
                      RequestParser parse, uint64_t tenant) {
  if (auto refusal = not_serving(impl, exchange->request().path))
    return exchange->respond(std::move(*refusal));
  run_on_worker(impl, exchange, [&impl, exchange, parse, tenant] {
    // The scheduler was seen ready; once set it lives as long as the server.
    const std::string &path = exchange->request().path;
    FieldNotes notes;
    ParsedRequest request = read_with_notes(notes, path, [&] {
      return parse(exchange->request().message.body(), impl.request_context);
    });
    NoteHeaders headers = notes.headers();
    if (request.answer)
      return std::function<void()>(
          [exchange, body = std::move(*request.answer), headers = std::move(headers)]() mutable {
            exchange->respond(with_notes(HttpResponse(200, std::move(body)), headers));
          });
    JobList jobs = make_jobs(impl, request.spec, tenant, error_shape_of(path));
    std::shared_ptr<ReplyWriter> writer = request.writer(jobs);
    return std::function<void()>(
        [&impl, exchange, jobs, writer, headers = std::move(headers)]() mutable {
          queue_jobs(impl, *exchange, std::move(jobs), std::move(writer), std::move(headers));
        });
  });
}

HttpResponse with_notes(HttpResponse response, const NoteHeaders &notes) {
  for (const auto &[name, value] : notes)
    response.header(name, value);
  return response;
}

void log_field_notes(const FieldNotes &notes, const std::string &path) {
  if (notes.empty())
    return;
  const auto joined = [](const std::vector<std::string> &items) {
    std::string text;
    for (const std::string &item : items)
      text.append(text.empty() ? "" : "; ").append(item);
    return text;
  };
  if (!notes.ignored().empty())
    log_at(LogLevel::debug, "{}: ignored fields: {}", path, joined(notes.ignored()));
  if (!notes.warnings().empty())
    log_at(LogLevel::debug, "{}: left out: {}", path, joined(notes.warnings()));
}

} // namespace bonsai::server
