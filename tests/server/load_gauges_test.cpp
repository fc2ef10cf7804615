// The load /metrics shows (Scheduler::load) is read when it is scraped, not
// published once per step: with the scheduler held inside a step (a draft
// that waits to be released), requests that arrive meanwhile show as
// waiting at once. The KV share counts only what running requests hold.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "schedule/scheduler.hpp"
#include "server_test_support.hpp"

namespace {

using namespace server_test;
using namespace bonsai::server;

// A drafter whose first proposal blocks the scheduler's step until released.
class HeldDrafter final : public Drafter {
public:
  std::vector<std::vector<int32_t>> propose(std::span<const DraftAsk> asks) override {
    std::unique_lock lock(mutex_);
    entered_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return released_; });
    return std::vector<std::vector<int32_t>>(asks.size()); // no proposals
  }
  void keep(int32_t, int32_t) override {}

  bool wait_entered() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return entered_; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool entered_ = false, released_ = false;
};

std::shared_ptr<Job> make_job(const bonsai::Engine &engine, const std::string &prompt,
                              int32_t tokens, bool drafts) {
  CompletionSpec spec;
  spec.endpoint = Endpoint::completion;
  spec.generate.prompt = prompt;
  spec.generate.n_predict = tokens;
  spec.generate.sampling.temperature = 0;
  spec.generate.draft.max = drafts ? 4 : 0; // only a drafting job reaches the drafter
  spec.generate.draft.adaptive = false;     // it asks at every step
  bonsai::Generation generation(engine, spec.generate);
  return std::make_shared<Job>(std::move(spec), std::move(generation), 0);
}

bool ends(const std::shared_ptr<Job> &job) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!job->finished() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return job->finished();
}

TEST(LoadGauges, read_when_scraped_while_a_step_runs) {
  const bonsai::Engine engine = open_tiny(256);
  bonsai::BatchOptions batch_options;
  batch_options.max_sequences = 2;
  auto drafter = std::make_unique<HeldDrafter>();
  HeldDrafter &held = *drafter;
  Metrics metrics;
  Scheduler scheduler(engine.create_batch(batch_options), {}, metrics, std::move(drafter));

  LoadGauges load = scheduler.load();
  EXPECT_EQ(load.waiting, 0);
  EXPECT_EQ(load.running, 0);
  EXPECT_EQ(load.slots, 2);
  EXPECT_EQ(load.slot_positions, 256);
  EXPECT_EQ(load.kv_running, 0);

  // The drafting job reads its prompt, then its first decode step asks the
  // drafter and stays in that step.
  const auto first = make_job(engine, "The first request", 40, true);
  const auto prompt_tokens = static_cast<int64_t>(first->generation.prompt().size());
  ASSERT_EQ(scheduler.submit(first), Scheduler::Submitted::queued);
  ASSERT_TRUE(held.wait_entered());
  load = scheduler.load();
  EXPECT_EQ(load.running, 1);
  EXPECT_EQ(load.waiting, 0);
  // Its prompt is in the cache (the step being held feeds the first token).
  EXPECT_EQ(load.kv_running, prompt_tokens);
  EXPECT_EQ(load.kv_cached, prompt_tokens);

  // Two more arrive while the step is held: both wait (one slot is free,
  // but no admission happens inside a step), and the scrape says so now.
  const auto second = make_job(engine, "The second request", 3, false);
  const auto third = make_job(engine, "The third request", 3, false);
  ASSERT_EQ(scheduler.submit(second), Scheduler::Submitted::queued);
  ASSERT_EQ(scheduler.submit(third), Scheduler::Submitted::queued);
  load = scheduler.load();
  EXPECT_EQ(load.waiting, 2);
  EXPECT_EQ(load.running, 1);

  held.release();
  ASSERT_TRUE(ends(first));
  ASSERT_TRUE(ends(second));
  ASSERT_TRUE(ends(third));
  // Every request ended: nothing runs or waits, and the idle slots' cached
  // prompts are held by no running request.
  const auto idle = [&] {
    const LoadGauges now = scheduler.load();
    return now.running == 0 && now.waiting == 0;
  };
  ASSERT_TRUE(eventually(idle, std::chrono::seconds(10)));
  load = scheduler.load();
  EXPECT_EQ(load.kv_running, 0);
  EXPECT_GT(load.kv_cached, prompt_tokens);
}

} // namespace
