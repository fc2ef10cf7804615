#include "schedule/scheduler.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "base/server_log.hpp"
#include "schedule/mtp_drafter.hpp"
#include "schedule/slot_choice.hpp"

namespace bonsai::server {
namespace {

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

Finish finish_of(StopReason reason) {
  return reason == StopReason::length ? Finish::length : Finish::stop;
}

} // namespace

Scheduler::Scheduler(Batch batch, SchedulerOptions options, Metrics &metrics,
                     std::unique_ptr<Drafter> draft)
    : batch_(std::move(batch)), draft_(std::move(draft)), options_(options), metrics_(metrics),
      n_ctx_(batch_.n_ctx()), n_batch_(batch_.n_batch()),
      pacer_({options.prefill_chunk, options.itl_budget}) {
  // Every running reply puts one token in each step.
  if (batch_.max_sequences() > n_batch_)
    throw InvalidArgument(fmt::format("{} slots need steps of at least {} tokens, but the batch "
                                      "size is {} (raise -b, or lower --parallel)",
                                      batch_.max_sequences(), batch_.max_sequences(), n_batch_));
  slots_.resize(static_cast<size_t>(batch_.max_sequences()));
  free_slots_ = batch_.max_sequences();
  for (Slot &slot : slots_)
    slot.sequence = batch_.add_sequence();
  if (!draft_ && options.mtp_p_min >= 0.0f) {
    std::vector<int32_t> sequences;
    for (const Slot &slot : slots_)
      sequences.push_back(slot.sequence);
    draft_ = std::make_unique<MtpDrafter>(batch_, std::move(sequences), options.mtp_p_min);
  }
  publish_load(-1);
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  drain(std::chrono::milliseconds(0));
}

Scheduler::Submitted Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard lock(mutex_);
    if (draining_)
      return Submitted::stopping;
    // Jobs the free slots will take at the next step do not count as waiting.
    const auto waiting = static_cast<int32_t>(queue_.size()) + arrivals_out_;
    if (waiting >= options_.max_queue + free_slots_)
      return Submitted::queue_full;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return Submitted::queued;
}

void Scheduler::drain(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mutex_);
    if (!draining_) {
      draining_ = true;
      deadline_ = Clock::now() + grace;
    } else {
      deadline_ = std::min(deadline_, Clock::now() + grace);
    }
  }
  wake_.notify_one();
  if (thread_.joinable())
    thread_.join();
}

void Scheduler::loop() {
  std::deque<std::shared_ptr<Job>> arrivals;
  for (;;) {
    bool past_deadline = false;
    {
      std::unique_lock lock(mutex_);
      const bool running =
          std::any_of(slots_.begin(), slots_.end(), [](const Slot &s) { return s.job != nullptr; });
      if (!running && queue_.empty()) {
        if (draining_)
          break;
        wake_.wait(lock, [&] { return draining_ || !queue_.empty(); });
        if (queue_.empty() && draining_)
          break;
      }
      past_deadline = draining_ && Clock::now() >= deadline_;
      arrivals.swap(queue_);
      arrivals_out_ = static_cast<int32_t>(arrivals.size());
    }
    if (past_deadline) {
      for (auto &job : arrivals)
        end_queued(job, Finish::cancelled);
      for (Slot &slot : slots_)
        if (slot.job)
          finish(slot, Finish::cancelled, slot.job->generation.finish());
      arrivals.clear(); // submit() refuses work once draining: queue_ stays empty
      break;
    }
    try {
      run_once(arrivals);
    } catch (const std::exception &error) {
      // Nothing may end this thread while requests wait on it: fail the
      // running ones, start their slots over, and go on.
      log_at(LogLevel::error, "the scheduler failed: {}", error.what());
      fail_running(error.what());
    }
    {
      // Jobs that found no slot go back to the front of the queue, in order.
      std::lock_guard lock(mutex_);
      queue_.insert(queue_.begin(), std::make_move_iterator(arrivals.begin()),
                    std::make_move_iterator(arrivals.end()));
      arrivals.clear();
      arrivals_out_ = 0;
    }
    publish_load(-1);
  }
  publish_load(-1);
}

void Scheduler::run_once(std::deque<std::shared_ptr<Job>> &arrivals) {
  for (Slot &slot : slots_)
    if (slot.job && slot.job->cancelled.load())
      finish(slot, Finish::cancelled, slot.job->generation.finish());
  // Queued jobs whose client left give up their place at once.
  std::erase_if(arrivals, [this](const std::shared_ptr<Job> &job) {
    if (!job->cancelled.load())
      return false;
    end_queued(job, Finish::cancelled);
    return true;
  });
  admit(arrivals);
  publish_load(static_cast<int32_t>(arrivals.size()));
  step();
}

void Scheduler::fail_running(const std::string &why) {
  for (Slot &slot : slots_)
    if (slot.job)
      fail_slot(slot, why);
}

void Scheduler::fail_slot(Slot &slot, const std::string &why) {
  try {
    batch_.truncate(slot.sequence, 0); // its cache may be half-written: start it over
  } catch (const std::exception &) {
    // The cache stays as it is; the sequence's tokens still describe it.
  }
  finish(slot, Finish::error, slot.job->generation.finish(), why);
}

void Scheduler::admit(std::deque<std::shared_ptr<Job>> &arrivals) {
  while (!arrivals.empty()) {
    const std::shared_ptr<Job> &job = arrivals.front();
    if (job->cancelled.load()) {
      end_queued(job, Finish::cancelled);
      arrivals.pop_front();
      continue;
    }
    std::vector<SlotView> views;
    views.reserve(slots_.size());
    for (const Slot &slot : slots_)
      views.push_back(
          {slot.job != nullptr, batch_.tokens(slot.sequence), slot.last_used, slot.tenant});
    const std::vector<int32_t> &prompt = job->generation.prompt();
    const std::optional<SlotChoice> choice = choose_slot(views, prompt, job->tenant);
    if (!choice)
      return;
    Slot &slot = slots_[static_cast<size_t>(choice->slot)];
    int32_t reused = choice->keep;
    try {
      if (choice->copy_from >= 0) {
        batch_.copy_prefix(slots_[static_cast<size_t>(choice->copy_from)].sequence, slot.sequence,
                           choice->copy_length);
        reused = choice->copy_length;
      } else {
        batch_.truncate(slot.sequence, choice->keep);
      }
    } catch (const Error &error) {
      // The slot's cache is in an unknown state: start it over.
      log_at(LogLevel::warn, "prompt cache: {}; evaluating the whole prompt", error.what());
      batch_.truncate(slot.sequence, 0);
      reused = 0;
    }
    if (draft_) {
      try {
        draft_->keep(static_cast<int32_t>(&slot - slots_.data()),
                     slot.tenant == job->tenant ? reused : 0);
      } catch (const Error &error) {
        log_at(LogLevel::warn, "the draft model failed: {}", error.what());
      }
    }
    slot.job = job;
    slot.tenant = job->tenant;
    slot.prompt_left.assign(prompt.begin() + reused, prompt.end());
    slot.prompt_done = 0;
    slot.next_token = -1;
    slot.admitted = slot.last_used = ++clock_;
    slot.admitted_at = Clock::now();
    slot.usage = {};
    slot.usage.prompt_tokens = static_cast<int32_t>(prompt.size());
    slot.usage.cached_tokens = reused;
    arrivals.pop_front();
  }
}

void Scheduler::step() {
  const auto step_start = Clock::now();
  std::vector<Slot *> decoding;
  std::vector<Slot *> reading; // prompts, first come first served
  for (Slot &slot : slots_) {
    if (slot.job && slot.next_token >= 0)
      decoding.push_back(&slot);
    else if (slot.job)
      reading.push_back(&slot);
  }
  std::sort(reading.begin(), reading.end(),
            [](const Slot *a, const Slot *b) { return a->admitted < b->admitted; });
  const auto n_decoding = static_cast<int32_t>(decoding.size());
  const int32_t prefill_share = reading.empty()  ? 0
                                : n_decoding > 0 ? pacer_.chunk(n_decoding)
                                                 : options_.prefill_chunk;
  draft(decoding, n_batch_ - n_decoding - prefill_share);

  std::vector<SequenceInput> inputs;
  std::vector<Slot *> stepped; // the slot of each input
  int32_t used = 0;
  for (Slot *slot : decoding) {
    inputs.push_back({slot->sequence, slot->fed, true, slot->fed.size() > 1});
    stepped.push_back(slot);
    used += static_cast<int32_t>(slot->fed.size());
  }
  int32_t budget = std::min(n_batch_ - used, n_decoding > 0 ? prefill_share : n_batch_);
  int32_t prompt_tokens = 0;
  for (Slot *slot : reading) {
    if (budget <= 0)
      break;
    const auto left = static_cast<int32_t>(slot->prompt_left.size() - slot->prompt_done);
    const int32_t take = std::min(left, budget);
    budget -= take;
    prompt_tokens += take;
    inputs.push_back({slot->sequence,
                      std::span<const int32_t>(slot->prompt_left)
                          .subspan(slot->prompt_done, static_cast<size_t>(take)),
                      take == left});
    stepped.push_back(slot);
  }
  if (inputs.empty())
    return;

  BatchLogits logits;
  try {
    logits = batch_.step(inputs);
  } catch (const Error &error) {
    log_at(LogLevel::error, "a batch step failed: {}", error.what());
    for (Slot *slot : stepped)
      fail_slot(*slot, error.what());
    return;
  }
  const double step_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - step_start).count();
  pacer_.record(step_ms, used, prompt_tokens); // decode tokens with their drafts
  int32_t row = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Slot &slot = *stepped[i];
    const bool decodes = slot.next_token >= 0;
    if (!decodes)
      slot.prompt_done += inputs[i].tokens.size();
    if (!inputs[i].logits)
      continue;
    const int32_t first_row = row;
    row += inputs[i].all_logits ? static_cast<int32_t>(inputs[i].tokens.size()) : 1;
    try {
      if (decodes)
        take_verified(slot, logits, first_row, step_ms);
      else
        take_row(slot, logits.row(first_row));
    } catch (const std::exception &error) {
      if (slot.job)
        finish(slot, Finish::error, {}, error.what());
    }
  }
}

void Scheduler::draft(std::span<Slot *const> decoding, int32_t budget) {
  std::vector<std::vector<int32_t>> contexts(decoding.size());
  std::vector<DraftAsk> asks;
  std::vector<Slot *> asking;
  for (size_t i = 0; i < decoding.size(); ++i) {
    Slot &slot = *decoding[i];
    slot.fed.assign(1, slot.next_token);
    // The step's token and the one after the last proposal must still fit.
    const int32_t room =
        std::min(budget, context_of(*slot.job) - batch_.position(slot.sequence) - 2);
    const DraftOptions &wanted = slot.job->spec.generate.draft;
    if (room <= 0 || wanted.max <= 0 || (wanted.ngram <= 0 && !draft_))
      continue;
    Generation &generation = slot.job->generation;
    std::vector<int32_t> &context = contexts[i];
    context = batch_.tokens(slot.sequence);
    context.push_back(slot.next_token);
    std::vector<int32_t> found = generation.lookup_draft(context);
    if (!found.empty() || !draft_) {
      found.resize(
          static_cast<size_t>(generation.draft_length(static_cast<int32_t>(found.size()), room)));
      slot.fed.insert(slot.fed.end(), found.begin(), found.end());
      budget -= static_cast<int32_t>(found.size());
      continue;
    }
    const int32_t asked = generation.draft_length(room, room);
    if (asked <= 0)
      continue;
    asks.push_back({static_cast<int32_t>(&slot - slots_.data()), context, asked});
    asking.push_back(&slot);
    budget -= asked;
  }
  if (asks.empty())
    return;
  const auto draft_start = Clock::now();
  std::vector<std::vector<int32_t>> proposals;
  try {
    proposals = draft_->propose(asks);
  } catch (const Error &error) {
    // Drafts only save time: the step goes on without them.
    log_at(LogLevel::warn, "the draft model failed: {}; this step runs without drafts",
           error.what());
    return;
  }
  const double draft_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - draft_start).count();
  for (size_t i = 0; i < asks.size(); ++i) {
    Slot &slot = *asking[i];
    if (proposals[i].empty()) // it cost the draft's steps: a proposal refused
      slot.job->generation.record_empty_draft(draft_ms);
    slot.fed.insert(slot.fed.end(), proposals[i].begin(), proposals[i].end());
  }
}

void Scheduler::take_row(Slot &slot, std::span<const float> logits) {
  std::string text;
  if (!take_step(slot, slot.job->generation.next(logits), text, true))
    return;
  end_of_step(slot, std::move(text));
}

void Scheduler::take_verified(Slot &slot, const BatchLogits &logits, int32_t first_row,
                              double step_ms) {
  const std::vector<int32_t> fed = std::move(slot.fed);
  const auto n_proposed = static_cast<int32_t>(fed.size()) - 1;
  const int32_t before = batch_.position(slot.sequence) - static_cast<int32_t>(fed.size());
  Generation &generation = slot.job->generation;
  std::string text;
  int32_t kept = 0;
  bool running = true;
  for (int32_t i = 0; i <= n_proposed && running; ++i) {
    const std::span<const float> row = logits.row(first_row + i);
    const bool proposed = i < n_proposed;
    GenerationStep step =
        proposed ? generation.next(row, fed[static_cast<size_t>(i) + 1]) : generation.next(row);
    const bool in_cache = proposed && !step.stop && step.token == fed[static_cast<size_t>(i) + 1];
    if (!in_cache) {
      // The cache keeps the tokens fed up to this row's; the rest were refused.
      batch_.truncate(slot.sequence, before + 1 + i);
      if (n_proposed > 0) {
        metrics_.drafted(n_proposed, kept);
        generation.record_step(n_proposed, kept, step_ms);
      } else {
        generation.record_step(0, 0, step_ms);
      }
    }
    running = take_step(slot, std::move(step), text, i == 0);
    if (!in_cache)
      break;
    ++kept;
  }
  if (running)
    end_of_step(slot, std::move(text));
}

bool Scheduler::take_step(Slot &slot, GenerationStep step, std::string &text, bool first_of_step) {
  Job &job = *slot.job;
  const auto now = Clock::now();
  if (slot.next_token == -1) {
    metrics_.time_to_first_token(seconds_between(job.queued_at, now));
    slot.first_token_at = now;
  } else // tokens after the first of a verified step arrive with it
    metrics_.inter_token_latency(first_of_step ? seconds_between(slot.last_token_at, now) : 0.0);
  slot.last_token_at = now;
  slot.last_used = ++clock_;
  slot.usage.completion_tokens = job.generation.generated();
  if (step.logprobs)
    slot.logprobs.push_back(std::move(*step.logprobs));
  text += step.text;
  if (step.stop) {
    finish(slot, finish_of(*step.stop), std::move(text), {}, std::move(step.stop_string));
    return false;
  }
  slot.next_token = step.token;
  return true;
}

void Scheduler::end_of_step(Slot &slot, std::string text) {
  Job &job = *slot.job;
  // Feeding the next token needs one more position.
  if (batch_.position(slot.sequence) + 1 > context_of(job)) {
    finish(slot, Finish::length, text + job.generation.finish());
    return;
  }
  if (!text.empty()) {
    JobEvent event;
    event.text = std::move(text);
    event.logprobs = std::exchange(slot.logprobs, {});
    job.push(std::move(event));
  }
}

void Scheduler::finish(Slot &slot, Finish how, std::string text, std::string error,
                       std::string stop_string) {
  Job &job = *slot.job;
  metrics_.tokens(slot.usage.prompt_tokens, slot.usage.cached_tokens, slot.usage.completion_tokens);
  if (const GenerateStats c = job.generation.constraint_stats(); c.constrained_tokens > 0)
    metrics_.constrained(c.constrained_tokens, c.constraint_masks, c.constraint_ms / 1000.0);
  JobEvent event;
  event.text = std::move(text);
  event.finish = how;
  event.error = std::move(error);
  event.stop_string = std::move(stop_string);
  event.usage = slot.usage;
  const Clock::time_point now = Clock::now();
  event.times = {slot.admitted_at, slot.next_token == -1 ? now : slot.first_token_at, now};
  event.logprobs = std::exchange(slot.logprobs, {});
  job.push(std::move(event));
  slot.job.reset();
  slot.prompt_left.clear();
  slot.prompt_done = 0;
  slot.next_token = -1;
  // The slot is free for the next request, and its positions are no longer
  // held: routers see it at once, not after the step.
  publish_load(-1);
}

void Scheduler::end_queued(const std::shared_ptr<Job> &job, Finish how) {
  JobEvent event;
  event.finish = how;
  const Clock::time_point now = Clock::now();
  event.times = {now, now, now};
  job->push(std::move(event));
}

int32_t Scheduler::context_of(const Job &job) const {
  const int32_t asked = job.spec.n_ctx;
  return asked > 0 ? std::min(asked, n_ctx_) : n_ctx_;
}

LoadGauges Scheduler::load() const {
  LoadGauges load;
  load.slots = static_cast<int32_t>(slots_.size());
  load.slot_positions = n_ctx_;
  std::lock_guard lock(mutex_);
  load.waiting = static_cast<int32_t>(queue_.size()) + arrivals_out_;
  load.running = running_;
  load.kv_running = kv_running_;
  load.kv_cached = kv_cached_;
  return load;
}

void Scheduler::publish_load(int32_t waiting) {
  int32_t running = 0;
  int64_t kv_running = 0, kv_cached = 0;
  for (const Slot &slot : slots_) {
    const int64_t positions = batch_.position(slot.sequence);
    kv_cached += positions;
    if (slot.job) {
      ++running;
      kv_running += positions;
    }
  }
  std::lock_guard lock(mutex_);
  running_ = running;
  kv_running_ = kv_running;
  kv_cached_ = kv_cached;
  free_slots_ = static_cast<int32_t>(slots_.size()) - running;
  if (waiting >= 0)
    arrivals_out_ = waiting;
}

} // namespace bonsai::server
