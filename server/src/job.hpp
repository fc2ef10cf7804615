#pragma once
// One request in flight, shared by the HTTP thread that answers it and the
// scheduler thread that generates it. The scheduler pushes events (text,
// then one final event); the HTTP thread pops them, and sets `cancelled`
// when its client goes away.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "bonsai/generation.hpp"
#include "openai_request.hpp"

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

struct JobEvent {
  std::string text;             // generated text (may be empty on the final event)
  std::optional<Finish> finish; // set on the last event
  std::string error;            // with Finish::error
  JobUsage usage;               // on the last event
};

class Job {
public:
  Job(CompletionSpec spec, Generation generation)
      : spec(std::move(spec)), generation(std::move(generation)), queued_at(Clock::now()) {}

  const CompletionSpec spec;
  // Used by the scheduler thread only, once the job is submitted.
  Generation generation;
  const Clock::time_point queued_at;
  std::atomic<bool> cancelled{false};

  // Scheduler side.
  void push(JobEvent event) {
    {
      std::lock_guard lock(mutex_);
      if (event.finish)
        finished_ = true;
      events_.push_back(std::move(event));
    }
    ready_.notify_one();
  }

  // HTTP side: the next event, or nullopt when none came within `timeout`.
  std::optional<JobEvent> pop(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); }))
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
  std::condition_variable ready_;
  std::deque<JobEvent> events_;
  bool finished_ = false;
};

} // namespace bonsai::server
