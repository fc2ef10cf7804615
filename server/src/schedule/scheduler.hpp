#pragma once
// Continuous batching: one thread owns the Batch and advances every running
// request in one step, mixing single decode tokens with chunks of the
// prompts being read. Requests wait in a bounded queue for a free slot; a
// finished or cancelled request frees its slot at once, and the next step
// already carries the next request.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/metrics.hpp"
#include "bonsai/batch.hpp"
#include "schedule/draft_model.hpp"
#include "schedule/job.hpp"
#include "schedule/prefill_pacer.hpp"

namespace bonsai::server {

struct SchedulerOptions {
  int32_t max_queue = 64;     // jobs waiting for a slot
  int32_t prefill_chunk = 64; // most prompt tokens per step while others decode
  // A step that reads prompt tokens while others decode may take this many
  // times a decode-only step (by measured costs, prefill_pacer.hpp); 0: every
  // such step takes prefill_chunk tokens.
  double itl_budget = 1.75;
  // Draft with the model's MTP layer (the batch made with
  // BatchOptions::mtp), stopping below this probability; < 0: no MTP draft.
  float mtp_p_min = -1.0f;
};

class Scheduler {
public:
  // One slot per sequence of `batch` (its max_sequences). `draft`: the
  // draft model of speculative decoding, or null (then options.mtp_p_min
  // may ask for the MTP draft); a job drafts when its
  // GenerateRequest::draft asks for it (docs/speculative.md).
  Scheduler(Batch batch, SchedulerOptions options, Metrics &metrics,
            std::unique_ptr<Drafter> draft = nullptr);
  ~Scheduler(); // drain with no grace
  Scheduler(const Scheduler &) = delete;
  Scheduler &operator=(const Scheduler &) = delete;

  enum class Submitted { queued, queue_full, stopping };
  Submitted submit(std::shared_ptr<Job> job);
  // Stops taking jobs; the queued and running ones go on for up to `grace`,
  // then the rest end as cancelled. Blocks until the scheduler thread ends.
  void drain(std::chrono::milliseconds grace);

  int32_t n_ctx() const { return n_ctx_; }
  // Requests waiting and running and the KV positions held, now (any
  // thread): what /metrics shows. Waiting and running change as requests
  // arrive, start and end; KV positions as of the last step or end.
  LoadGauges load() const;

private:
  struct Slot {
    int32_t sequence = -1;
    std::shared_ptr<Job> job;         // null: free
    std::vector<int32_t> prompt_left; // prompt tokens still to evaluate
    size_t prompt_done = 0;           // of prompt_left
    int32_t next_token = -1;          // decoding: the token to feed
    uint64_t admitted = 0;            // admission order (prompts are read first come, first served)
    Clock::time_point admitted_at;    // JobTimes
    Clock::time_point first_token_at;
    uint64_t last_used = 0;
    Clock::time_point last_token_at;
    uint64_t tenant = 0; // whose tokens the KV cache holds
    JobUsage usage;
    std::vector<StepLogprobs> logprobs; // not yet pushed with an event
    // This step's input while decoding: next_token, then the proposals.
    std::vector<int32_t> fed;
  };

  void loop();
  // One step: cancellations, admissions, the batch step and its rows.
  void run_once(std::deque<std::shared_ptr<Job>> &arrivals);
  // Ends every running job with Finish::error after an unexpected failure.
  void fail_running(const std::string &why);
  // Ends the slot's job with Finish::error and empties its cache.
  void fail_slot(Slot &slot, const std::string &why);
  void admit(std::deque<std::shared_ptr<Job>> &arrivals);
  void step();
  // Each decoding slot's proposals (lookup, then the draft model), within
  // `budget` tokens beyond one per slot; fills Slot::fed.
  void draft(std::span<Slot *const> decoding, int32_t budget);
  void take_row(Slot &slot, std::span<const float> logits);
  // A decoding slot's rows after a step that fed Slot::fed: the proposals
  // kept, the first one refused or the stop, the cache cut back to match.
  void take_verified(Slot &slot, const BatchLogits &logits, int32_t first_row, double step_ms);
  // The step's token for the slot: metrics, usage, text; false when the
  // job finished (then `text` was sent with the finish).
  bool take_step(Slot &slot, GenerationStep step, std::string &text, bool first_of_step);
  // After a slot's last token of a step: ends the job when the context is
  // full, else sends the step's text.
  void end_of_step(Slot &slot, std::string text);
  void finish(Slot &slot, Finish how, std::string text = {}, std::string error = {},
              std::string stop_string = {});
  // Positions the job may fill, prompt and reply: the slot's, or fewer
  // when its request asks (CompletionSpec::n_ctx).
  int32_t context_of(const Job &job) const;
  void end_queued(const std::shared_ptr<Job> &job, Finish how);
  // Publishes the slots' state for load() and submit(): `waiting` arrivals
  // are still out of the queue, waiting for a slot.
  void publish_load(int32_t waiting);

  Batch batch_;
  std::unique_ptr<Drafter> draft_;
  const SchedulerOptions options_;
  Metrics &metrics_;
  const int32_t n_ctx_;
  const int32_t n_batch_;
  std::vector<Slot> slots_; // scheduler thread only
  uint64_t clock_ = 0;      // admissions and uses, for ordering
  PrefillPacer pacer_;      // scheduler thread only

  mutable std::mutex mutex_; // guards what follows
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  int32_t arrivals_out_ = 0; // jobs taken from queue_ that have no slot yet
  int32_t free_slots_ = 0;   // as of the last admission or end
  int32_t running_ = 0;      // likewise; with the KV positions, what load() reads
  int64_t kv_running_ = 0;
  int64_t kv_cached_ = 0;
  bool draining_ = false;
  Clock::time_point deadline_;

  std::thread thread_;
};

} // namespace bonsai::server
