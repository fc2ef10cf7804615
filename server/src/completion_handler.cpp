// POST /v1/chat/completions and /v1/completions: the body is parsed and the
// prompt tokenized on a worker thread; back on the I/O thread the job is
// queued, and its events are answered as a whole reply or streamed as
// server-sent events. A client that goes away cancels its job at once.
#include <algorithm>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "bonsai/generation.hpp"
#include "choice_assembly.hpp"
#include "error_response.hpp"
#include "openai_response.hpp"
#include "server_impl.hpp"
#include "server_log.hpp"

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

// Parses the request and tokenizes its prompt (worker thread): one job per
// choice (`n`), the k-th with seed + k when a seed is given.
std::vector<std::shared_ptr<Job>> make_jobs(const Server::Impl &impl, Endpoint endpoint,
                                            const std::string &body, uint64_t tenant) {
  CompletionSpec spec = parse_completion_request(endpoint, body, impl.request_context);
  std::vector<std::shared_ptr<Job>> jobs;
  for (int32_t k = 0; k < spec.n; ++k) {
    CompletionSpec choice = spec;
    if (choice.generate.sampling.seed)
      *choice.generate.sampling.seed += static_cast<uint64_t>(k);
    std::optional<Generation> generation;
    try {
      generation.emplace(*impl.engine, choice.generate);
    } catch (const FormatError &error) {
      throw bad_request(error.what(), choice.format_param);
    } catch (const InvalidArgument &error) {
      throw bad_request(error.what(), endpoint == Endpoint::chat ? "messages" : "prompt");
    }
    check_context(choice, *generation, impl.scheduler->n_ctx());
    // A constrained reply is finished within the context's room.
    generation->set_token_room(impl.scheduler->n_ctx() -
                               static_cast<int32_t>(generation->prompt().size()));
    if (endpoint == Endpoint::chat && choice.reasoning_format != ReasoningFormat::none)
      choice.reasoning_open = generation->prompt_opens_reasoning();
    jobs.push_back(std::make_shared<Job>(std::move(choice), std::move(*generation), tenant));
  }
  return jobs;
}

std::string sse(const std::string &data) {
  return "data: " + data + "\n\n";
}

ApiError job_error(const JobEvent &event) {
  return ApiError(500, "server_error", "The backend failed: " + event.error);
}

// The queued jobs of one request (one per choice) and the exchange they
// answer (I/O thread). The exchange holds it; the jobs' wakers reach it
// through a weak pointer, so a client that leaves drops it, and dropping it
// cancels the jobs.
class CompletionRun : public std::enable_shared_from_this<CompletionRun> {
public:
  CompletionRun(const std::shared_ptr<Exchange> &exchange, std::vector<std::shared_ptr<Job>> jobs)
      : exchange_(exchange), jobs_(std::move(jobs)), header_(new_response_header(jobs_[0]->spec)),
        finishes_(jobs_.size()) {
    for (size_t k = 0; k < jobs_.size(); ++k)
      choices_.push_back(
          std::make_unique<ChoiceAssembly>(jobs_[k]->spec, header_, static_cast<int32_t>(k)));
  }
  ~CompletionRun() { cancel_all(); }

  void start(Exchange &exchange) {
    exchange.hold(shared_from_this());
    exchange.on_client_gone([jobs = jobs_] {
      for (const auto &job : jobs)
        job->cancelled.store(true);
    });
    if (stream())
      exchange.begin_stream(
          HttpResponse(200, "", "text/event-stream").header("Cache-Control", "no-cache"));
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
    finishes_[k] = *event.finish;
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
      exchange.end_stream(); // the server is shutting down: no [DONE]
      return false;
    }
    if (event.finish == Finish::error) {
      cancel_all();
      exchange.write(sse(error_body(job_error(event))) + sse("[DONE]"));
      exchange.end_stream();
      return false;
    }
    for (const std::string &body : choices_[k]->stream(event))
      exchange.write(sse(body));
    if (!event.finish || !last_of_all(k, event))
      return true;
    if (jobs_[0]->spec.include_usage)
      exchange.write(sse(usage_chunk_body(header_, usage_)));
    exchange.write(sse("[DONE]"));
    exchange.end_stream();
    return false;
  }

  bool collect(Exchange &exchange, size_t k, JobEvent &event) {
    if (event.finish == Finish::cancelled || event.finish == Finish::error) {
      cancel_all();
      exchange.respond(event.finish == Finish::cancelled
                           ? error_response(503, "server_error", "The request was cancelled")
                           : error_response(job_error(event)));
      return false;
    }
    choices_[k]->collect(event);
    if (!event.finish || !last_of_all(k, event))
      return true;
    std::vector<json> choices;
    for (size_t c = 0; c < choices_.size(); ++c)
      choices.push_back(choices_[c]->choice(finishes_[c]));
    exchange.respond(HttpResponse(200, completion_body(header_, choices, usage_)));
    return false;
  }

  std::weak_ptr<Exchange> exchange_;
  const std::vector<std::shared_ptr<Job>> jobs_;
  const ResponseHeader header_;
  std::vector<std::unique_ptr<ChoiceAssembly>> choices_; // one per job, in index order
  std::vector<Finish> finishes_;
  size_t finished_ = 0; // choices whose last event is in
  JobUsage usage_;      // the prompt once, the completions summed
};

// Back on the I/O thread with the parsed jobs: all are queued, or none.
void queue_jobs(Server::Impl &impl, Exchange &exchange, std::vector<std::shared_ptr<Job>> jobs) {
  if (exchange.over())
    return; // the client left while its request was parsed
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
    std::make_shared<CompletionRun>(exchange.shared_from_this(), std::move(jobs))->start(exchange);
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
    std::vector<std::shared_ptr<Job>> jobs =
        make_jobs(impl, endpoint, exchange->request().message.body(), tenant);
    return std::function<void()>(
        [&impl, exchange, jobs]() mutable { queue_jobs(impl, *exchange, std::move(jobs)); });
  });
}

} // namespace bonsai::server
