#pragma once
// One request in flight, shared by the HTTP side that answers it and the
// scheduler thread that generates it. The scheduler pushes events (text,
// then one final event); the HTTP side is woken by a callback, takes them,
// and sets `cancelled` when its client goes away.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "bonsai/generation.hpp"
#include "request/completion_spec.hpp"

namespace bonsai::server {

using Clock = std::chrono::steady_clock;

// How a job ended, as OpenAI's finish_reason plus bonsai's own endings.
enum class Finish {
  stop,      // a stop token or stop string
  length,    // max_tokens, or the context window is full
  cancelled, // the client went away, or the server shut down
  error,     // the backend failed; JobEvent::error says why
};

struct JobUsage {
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0; // of prompt_tokens, reused from the prompt cache
  int32_t completion_tokens = 0;
};

// When a job's work happened, on its last event (Ollama's durations).
struct JobTimes {
  Clock::time_point admitted;    // it took a slot: its prompt began
  Clock::time_point first_token; // its first token was chosen: the prompt was read
  Clock::time_point finished;
};

struct JobEvent {
  std::string text;             // generated text (may be empty on the final event)
  std::optional<Finish> finish; // set on the last event
  std::string error;            // with Finish::error
  std::string stop_string;      // Finish::stop by a stop string: which one
  JobUsage usage;               // on the last event
  JobTimes times;               // on the last event
  // With logprobs: the tokens generated since the last event (the text may
  // be held back while they are not).
  std::vector<StepLogprobs> logprobs;
};

class Job {
public:
  // `tenant`: whose prompt-cache prefixes this job may share (see
  // CacheIsolation); jobs of different tenants never share one.
  Job(CompletionSpec spec, Generation generation, uint64_t tenant)
      : spec(std::move(spec)), tenant(tenant), generation(std::move(generation)),
        queued_at(Clock::now()) {}

  const CompletionSpec spec;
  const uint64_t tenant;
  // Used by the scheduler thread only, once the job is submitted.
  Generation generation;
  const Clock::time_point queued_at;
  std::atomic<bool> cancelled{false};

  // Scheduler side.
  void push(JobEvent event) {
    std::function<void()> wake;
    {
      std::lock_guard lock(mutex_);
      if (event.finish)
        finished_ = true;
      events_.push_back(std::move(event));
      wake = waker_;
    }
    if (wake)
      wake(); // outside the lock: it may post work to another thread
  }

  // HTTP side: called (on the scheduler's thread) after every push from now
  // on, and once at once if events are already waiting.
  void set_waker(std::function<void()> wake) {
    bool pending = false;
    {
      std::lock_guard lock(mutex_);
      waker_ = wake;
      pending = !events_.empty();
    }
    if (pending && wake)
      wake();
  }
  // HTTP side: the next event, if one is waiting.
  std::optional<JobEvent> try_pop() {
    std::lock_guard lock(mutex_);
    if (events_.empty())
      return std::nullopt;
    JobEvent event = std::move(events_.front());
    events_.pop_front();
    return event;
  }
  bool finished() const {
    std::lock_guard lock(mutex_);
    return finished_;
  }

private:
  mutable std::mutex mutex_;
  std::deque<JobEvent> events_;
  bool finished_ = false;
  std::function<void()> waker_;
};

} // namespace bonsai::server
