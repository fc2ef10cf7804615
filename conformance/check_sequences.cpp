// The sequences extension of ABI 1.1: a multi-sequence step gives each
// sequence what stepping it alone gives, and KV slots copy, truncate and
// refuse misuse.
#include <algorithm>
#include <cmath>
#include <optional>

#include "bound_model.hpp"
#include "golden.hpp"
#include "plugin_checks.hpp"
#include "step_runner.hpp"

namespace bonsai::conformance {
namespace {

constexpr double kFastCosine = 0.9995;

// A bound random model, the plugin's sequences extension and runners for
// single and multi-sequence steps on it; or why the check cannot run.
struct SequencesSetup {
  BoundSetup bound;
  const bonsai_sequences_extension *ext = nullptr;
  std::optional<test::StepRunner> alone;
  std::optional<test::BatchStepRunner> batched;

  bonsai_context *ctx() const { return bound.ctx->get(); }
  int n_vocab() const { return bound.model.shape.n_vocab; }
};

SequencesSetup setup_sequences(const PluginChecker &checker, Rng &rng, CheckResult &r) {
  SequencesSetup s;
  s.ext = test::sequences_extension(checker.api());
  if (s.ext == nullptr) {
    s.bound.skip_reason = "the plugin offers no sequences extension (ABI 1.1); the host steps "
                          "its sequences one at a time";
    return s;
  }
  s.bound = bind_random_model(checker.api(), checker.options(), preferred_type(checker), rng, r);
  if (!s.bound.skip_reason) {
    const ModelShape &shape = s.bound.model.shape;
    s.alone.emplace(checker.api(), s.ctx(), shape.n_layer, shape.n_vocab);
    s.batched.emplace(checker.api(), *s.ext, s.ctx(), shape.n_layer, shape.n_vocab);
  }
  return s;
}

// The same logits: identical bits on the exact kernels; cosine >= 0.9995 on
// the fast ones, whose GEMM may round otherwise for other token counts.
void expect_same_logits(const std::vector<float> &got, const std::vector<float> &expected,
                        size_t n_vocab, bool exact, const std::string &what, CheckResult &r) {
  if (!r.expect(got.size() == expected.size(), what + ": wrong number of logits"))
    return;
  if (exact) {
    r.expect(bitwise_equal(got, expected),
             what + ": logits differ from stepping the sequence alone (the exact kernels must "
                    "give identical bits)");
    return;
  }
  for (size_t row = 0; row < got.size() / n_vocab; ++row) {
    const double cos =
        test::cosine(got.data() + row * n_vocab, expected.data() + row * n_vocab, n_vocab);
    r.expect(cos >= kFastCosine, what + " token " + std::to_string(row) + ": cosine " +
                                     format_cosine(cos) + " to stepping it alone < 0.9995");
  }
}

} // namespace

CheckResult PluginChecker::multi_sequence_step() const {
  CheckResult r{"multi_sequence_step"};
  Rng rng(options_.seed + 303);
  SequencesSetup s = setup_sequences(*this, rng, r);
  if (skip_unbound(s.bound, r))
    return r;
  const size_t n_vocab = static_cast<size_t>(s.n_vocab());
  bonsai_context *ctx = s.ctx();
  const bonsai_sequences_extension &ext = *s.ext;
  const test::StepRunner &alone = *s.alone;
  const test::BatchStepRunner &batched = *s.batched;

  // Three sequences: a prompt of 5, 3 and 1 tokens, then steps of 1, 1 and 2.
  const std::vector<std::vector<int32_t>> prompts = {random_tokens(5, s.n_vocab(), rng),
                                                     random_tokens(3, s.n_vocab(), rng),
                                                     random_tokens(1, s.n_vocab(), rng)};
  const std::vector<std::vector<int32_t>> next = {random_tokens(1, s.n_vocab(), rng),
                                                  random_tokens(1, s.n_vocab(), rng),
                                                  random_tokens(2, s.n_vocab(), rng)};
  try {
    // Each sequence alone on slot 0: its prompt in one step, then its next
    // tokens in one step.
    std::vector<std::vector<float>> alone_prompt, alone_next;
    for (size_t i = 0; i < prompts.size(); ++i) {
      alone.check(api().kv_reset(ctx), "kv_reset");
      alone_prompt.push_back(alone.step(prompts[i]));
      alone_next.push_back(alone.step(next[i]));
    }

    // Together: slot 0 and two new slots, both steps batched.
    alone.check(api().kv_reset(ctx), "kv_reset");
    std::vector<int32_t> slots = {0, -1, -1};
    alone.check(ext.slot_create(ctx, &slots[1]), "slot_create");
    alone.check(ext.slot_create(ctx, &slots[2]), "slot_create");
    r.expect(slots[1] > 0 && slots[2] > 0 && slots[1] != slots[2],
             "slot_create gave ids " + std::to_string(slots[1]) + " and " +
                 std::to_string(slots[2]) + " (expected two different ids > 0)");
    std::vector<test::BatchStepRunner::Sequence> step1, step2;
    for (size_t i = 0; i < prompts.size(); ++i) {
      step1.push_back({slots[i], prompts[i]});
      step2.push_back({slots[i], next[i]});
    }
    const auto got1 = batched.step(step1);
    // The second step lists the sequences in another order: order must not matter.
    std::reverse(step2.begin(), step2.end());
    const auto got2 = batched.step(step2);
    for (size_t i = 0; i < prompts.size(); ++i) {
      const std::string name = "sequence " + std::to_string(i);
      expect_same_logits(got1[i], alone_prompt[i], n_vocab, options_.exact,
                         name + " prompt in a batch", r);
      expect_same_logits(got2[prompts.size() - 1 - i], alone_next[i], n_vocab, options_.exact,
                         name + " next tokens in a batch", r);
      int32_t length = -1;
      alone.check(ext.slot_length(ctx, slots[i], &length), "slot_length");
      const size_t expected = prompts[i].size() + next[i].size();
      r.expect(length == static_cast<int32_t>(expected), name + ": slot_length is " +
                                                             std::to_string(length) + " after " +
                                                             std::to_string(expected) + " tokens");
    }
  } catch (const std::exception &e) {
    r.fail(e.what());
  }
  return r;
}

CheckResult PluginChecker::kv_slots() const {
  CheckResult r{"kv_slots"};
  Rng rng(options_.seed + 404);
  SequencesSetup s = setup_sequences(*this, rng, r);
  if (skip_unbound(s.bound, r))
    return r;
  const size_t n_vocab = static_cast<size_t>(s.n_vocab());
  bonsai_context *ctx = s.ctx();
  const bonsai_sequences_extension &ext = *s.ext;
  const test::StepRunner &alone = *s.alone;
  const test::BatchStepRunner &batched = *s.batched;
  const std::vector<int32_t> prompt = random_tokens(6, s.n_vocab(), rng);
  const std::vector<int32_t> tail = random_tokens(2, s.n_vocab(), rng);
  r.expect(ext.max_slots >= 1, "max_slots is " + std::to_string(ext.max_slots) + " (< 1)");
  try {
    // Expected: the prompt then the tail, alone on slot 0.
    alone.step(prompt);
    const std::vector<float> tail_logits = alone.step(tail);

    // A copy of the prompt's prefix continues as the original would.
    int32_t copy = -1;
    alone.check(ext.slot_create(ctx, &copy), "slot_create");
    alone.check(ext.slot_copy(ctx, 0, copy, 6), "slot_copy(0 -> new, 6)");
    int32_t length = -1;
    alone.check(ext.slot_length(ctx, copy, &length), "slot_length");
    r.expect(length == 6,
             "slot_length after slot_copy of 6 positions is " + std::to_string(length));
    expect_same_logits(batched.step({{copy, tail}})[0], tail_logits, n_vocab, options_.exact,
                       "tail after slot_copy", r);

    // Truncating a slot and stepping again gives the same logits.
    alone.check(ext.slot_truncate(ctx, copy, 6), "slot_truncate(6)");
    expect_same_logits(batched.step({{copy, tail}})[0], tail_logits, n_vocab, options_.exact,
                       "tail after slot_truncate", r);

    // A shorter prefix: copy 4 positions, then step the prompt's last 2 and the tail.
    alone.check(ext.slot_copy(ctx, 0, copy, 4), "slot_copy(0 -> copy, 4)");
    std::vector<int32_t> rest(prompt.begin() + 4, prompt.end());
    rest.insert(rest.end(), tail.begin(), tail.end());
    const std::vector<float> rest_logits = batched.step({{copy, rest}})[0];
    const std::vector<float> rest_tail(rest_logits.end() - static_cast<std::ptrdiff_t>(2 * n_vocab),
                                       rest_logits.end());
    if (options_.exact)
      expect_same_logits(rest_tail, tail_logits, n_vocab, true, "tail after a 4-position copy", r);

    // Misuse is refused with INVALID_ARGUMENT and leaves the slots as they were.
    const auto refused = [&](bonsai_status status, const std::string &what) {
      r.expect(status == BONSAI_ERR_INVALID_ARGUMENT,
               what + " returned " + std::to_string(status) + ", not INVALID_ARGUMENT");
    };
    refused(ext.slot_free(ctx, 0), "slot_free(0)");
    refused(ext.slot_copy(ctx, copy, copy, 1), "slot_copy onto itself");
    refused(ext.slot_copy(ctx, 0, copy, 99), "slot_copy of more positions than slot 0 holds");
    refused(ext.slot_truncate(ctx, copy, 99), "slot_truncate past the slot's length");
    refused(ext.slot_length(ctx, 12345, &length), "slot_length of a slot that does not exist");
    refused(ext.slot_length(ctx, 0, nullptr), "slot_length with a NULL length");
    refused(ext.slot_create(ctx, nullptr), "slot_create with a NULL slot");
    refused(ext.begin_batch(ctx, nullptr), "begin_batch with a NULL batch");

    const int32_t token = prompt[0];
    int32_t position = 0;
    alone.check(ext.slot_length(ctx, 0, &position), "slot_length");
    bonsai_sequence_step entries[2] = {};
    for (bonsai_sequence_step &e : entries) {
      e.struct_size = sizeof e;
      e.slot = 0;
      e.n_tokens = 1;
      e.token_ids = &token;
      e.positions = &position;
    }
    bonsai_batch_step_desc batch{};
    batch.struct_size = sizeof batch;
    batch.n_sequences = 2;
    batch.sequences = entries;
    refused(ext.begin_batch(ctx, &batch), "begin_batch with slot 0 twice");
    entries[1].slot = 777;
    refused(ext.begin_batch(ctx, &batch), "begin_batch with a slot that does not exist");
    batch.n_sequences = 0;
    refused(ext.begin_batch(ctx, &batch), "begin_batch with no sequences");
    batch.n_sequences = 1;
    const int32_t wrong_position = position + 1;
    entries[0].positions = &wrong_position;
    refused(ext.begin_batch(ctx, &batch), "begin_batch with a position past the slot's length");
    r.expect(api().encode_layer(ctx, 0) == BONSAI_ERR_BAD_STATE,
             "encode_layer after a refused begin_batch is not BAD_STATE");

    // A freed slot is gone; its id may come back from slot_create.
    alone.check(ext.slot_free(ctx, copy), "slot_free");
    refused(ext.slot_length(ctx, copy, &length), "slot_length of a freed slot");
    refused(ext.slot_free(ctx, copy), "slot_free of a freed slot");
    int32_t again = -1;
    alone.check(ext.slot_create(ctx, &again), "slot_create after slot_free");
    alone.check(ext.slot_length(ctx, again, &length), "slot_length");
    r.expect(length == 0, "a new slot has length " + std::to_string(length) + ", not 0");
  } catch (const std::exception &e) {
    r.fail(e.what());
  }
  return r;
}

} // namespace bonsai::conformance
