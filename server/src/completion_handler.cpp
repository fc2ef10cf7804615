// POST /v1/chat/completions and /v1/completions: parse and check the
// request, queue it, then answer with the whole reply or stream it as
// server-sent events, cancelling the job as soon as the client goes away.
#include <fmt/format.h>

#include "bonsai/generation.hpp"
#include "connection_probe.hpp"
#include "openai_response.hpp"
#include "server_impl.hpp"

namespace bonsai::server {
namespace {

// How often a waiting handler looks at its client's connection.
constexpr std::chrono::milliseconds kProbeInterval{50};

// Rejects what cannot fit the context window before it takes a slot.
void check_context(const CompletionSpec &spec, const Generation &generation, int32_t n_ctx) {
  const auto prompt = static_cast<int64_t>(generation.prompt().size());
  const int64_t wanted = spec.generate.n_predict > 0 ? spec.generate.n_predict : 1;
  if (prompt + wanted > n_ctx)
    throw bad_request(
        spec.generate.n_predict > 0
            ? fmt::format("This model's context window is {} tokens per request, but {} were "
                          "requested ({} in the prompt, {} to generate)",
                          n_ctx, prompt + wanted, prompt, wanted)
            : fmt::format("This model's context window is {} tokens per request; the prompt "
                          "holds {}, which leaves no room to generate",
                          n_ctx, prompt),
        spec.endpoint == Endpoint::chat ? "messages" : "prompt", "context_length_exceeded");
}

std::shared_ptr<Job> make_job(const Server::Impl &impl, const Scheduler &scheduler,
                              CompletionSpec spec) {
  std::optional<Generation> generation;
  try {
    generation.emplace(*impl.engine, spec.generate);
  } catch (const InvalidArgument &error) {
    throw bad_request(error.what());
  }
  check_context(spec, *generation, scheduler.n_ctx());
  return std::make_shared<Job>(std::move(spec), std::move(*generation));
}

// A handler's view of its job: the next event, or nullopt once the client
// has gone (the job is then cancelled). The connection is looked at at most
// once per kProbeInterval, however fast events arrive.
class JobListener {
public:
  JobListener(Job &job, const ConnectionProbe &probe) : job_(job), probe_(probe) {}
  std::optional<JobEvent> next() {
    for (;;) {
      std::optional<JobEvent> event = job_.pop(kProbeInterval);
      const auto now = Clock::now();
      if (now - last_probe_ >= kProbeInterval) {
        last_probe_ = now;
        if (probe_.closed()) {
          job_.cancelled.store(true);
          return std::nullopt;
        }
      }
      if (event)
        return event;
    }
  }

private:
  Job &job_;
  const ConnectionProbe &probe_;
  Clock::time_point last_probe_ = Clock::now();
};

std::string sse(const std::string &data) {
  return "data: " + data + "\n\n";
}

ApiError job_error(const JobEvent &event) {
  return ApiError(500, "server_error", "The backend failed: " + event.error);
}

// Streams the job's events as OpenAI chunks. Returns false when the client
// is gone (the job is then cancelled).
bool stream_job(Job &job, const ResponseHeader &header, const ConnectionProbe &probe,
                httplib::DataSink &sink) {
  auto send = [&](const std::string &data) {
    if (sink.write(data.data(), data.size()))
      return true;
    job.cancelled.store(true);
    return false;
  };
  bool first = true;
  JobListener listener(job, probe);
  while (std::optional<JobEvent> event = listener.next()) {
    if (event->finish == Finish::cancelled)
      return false; // the server is shutting down: end without [DONE]
    if (event->finish == Finish::error) {
      if (!send(sse(error_body(job_error(*event)))) || !send(sse("[DONE]")))
        return false;
      sink.done(); // else cpp-httplib asks for more
      return true;
    }
    if (!event->text.empty() || event->finish) {
      if (!send(sse(chunk_body(header, event->text, event->finish, first))))
        return false;
      first = false;
    }
    if (event->finish) {
      if (job.spec.include_usage && !send(sse(usage_chunk_body(header, event->usage))))
        return false;
      if (!send(sse("[DONE]")))
        return false;
      sink.done();
      return true;
    }
  }
  return false;
}

// Waits for the whole reply; nullopt when the client went away first.
std::optional<JobEvent> collect_job(Job &job, const ConnectionProbe &probe) {
  std::string text;
  JobListener listener(job, probe);
  while (std::optional<JobEvent> event = listener.next()) {
    text += event->text;
    if (event->finish) {
      event->text = std::move(text);
      return event;
    }
  }
  return std::nullopt;
}

void answer(Server::Impl &impl, Endpoint endpoint, const httplib::Request &request,
            httplib::Response &response) {
  Scheduler *scheduler = impl.ready_scheduler();
  if (scheduler == nullptr)
    throw ApiError(503, "server_error",
                   impl.state.load() == ServerState::loading ? "The model is still loading"
                                                             : "The server is not serving");
  std::string model_id;
  {
    std::lock_guard lock(impl.mutex);
    model_id = impl.model_id;
  }
  auto job = make_job(impl, *scheduler, parse_completion_request(endpoint, request.body, model_id));
  switch (scheduler->submit(job)) {
  case Scheduler::Submitted::queued:
    break;
  case Scheduler::Submitted::queue_full:
    response.set_header("Retry-After", "1");
    throw ApiError(
        429, "rate_limit_error",
        fmt::format("The server is busy: {} requests are already waiting", impl.options.max_queue),
        {}, "queue_full");
  case Scheduler::Submitted::stopping:
    throw ApiError(503, "server_error", "The server is shutting down");
  }
  // Whatever fails from here on, the queued job must not run for nobody.
  struct CancelUnlessAnswered {
    Job &job;
    bool answered = false;
    ~CancelUnlessAnswered() {
      if (!answered)
        job.cancelled.store(true);
    }
  } guard{*job};
  const ResponseHeader header = new_response_header(job->spec);
  auto probe = std::make_shared<ConnectionProbe>(request.remote_addr, request.remote_port,
                                                 request.local_port);
  if (job->spec.stream) {
    response.set_header("Cache-Control", "no-cache");
    response.set_chunked_content_provider(
        "text/event-stream",
        [job, header, probe](size_t, httplib::DataSink &sink) {
          return stream_job(*job, header, *probe, sink);
        },
        [job](bool) {
          if (!job->finished())
            job->cancelled.store(true);
        });
    guard.answered = true;
    return;
  }
  const std::optional<JobEvent> whole = collect_job(*job, *probe);
  guard.answered = true;
  if (!whole || whole->finish == Finish::cancelled) {
    response.status = 503; // nobody is listening, or the server is shutting down
    return send_error(response, ApiError(503, "server_error", "The request was cancelled"));
  }
  if (whole->finish == Finish::error)
    return send_error(response, job_error(*whole));
  response.set_content(completion_body(header, whole->text, *whole->finish, whole->usage),
                       "application/json");
}

} // namespace

void handle_completion(Server::Impl &impl, Endpoint endpoint, const httplib::Request &request,
                       httplib::Response &response) {
  try {
    answer(impl, endpoint, request, response);
  } catch (const ApiError &error) {
    send_error(response, error);
  }
}

} // namespace bonsai::server
