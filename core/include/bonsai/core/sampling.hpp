#pragma once
// Token sampling from f32 logits over the vocabulary, one step at a time.
//
// Pipeline per step (llama.cpp's usual chain):
//   penalties -> top-k -> temperature -> softmax -> top-p -> min-p -> draw.
// temperature <= 0 means greedy: penalties, then argmax (no random draw).
//
// Determinism: for the same parameters, seed, accepted tokens and logits the
// sampler returns the same tokens on every platform. The generator is
// std::mt19937_64 (fully specified by the standard); a uniform double in
// [0, 1) is made from its top 53 bits, not from std::uniform_real_distribution
// (whose algorithm is implementation-defined). One draw per non-greedy step:
// walk the survivors (best first once top-k or top-p sorted them, else in id
// order) and return the first whose running probability sum exceeds
// u * total.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace bonsai {

struct SamplerParams {
  float temperature = 0.8f;       // <= 0: greedy
  int32_t top_k = 40;             // <= 0 or >= vocab: off
  float top_p = 0.95f;            // in [0, 1]; 1: off (0 keeps only the best token)
  float min_p = 0.05f;            // in [0, 1]; 0: off
  float repeat_penalty = 1.0f;    // > 0; 1: off. Divides positive logits, multiplies negative ones
  int32_t repeat_last_n = 64;     // >= 0: window of accepted tokens the penalties look at
  float presence_penalty = 0.0f;  // subtracted once from every token in the window
  float frequency_penalty = 0.0f; // subtracted count times (count within the window)
  uint64_t seed = 0;

  // Throws bonsai::Error naming the first invalid field, its value and the
  // allowed range (NaN and infinities are invalid everywhere).
  void validate() const;
  bool greedy() const { return temperature <= 0.0f; }
  bool penalties_enabled() const;
};

// Index of the largest logit; the lowest index wins ties and NaN never wins.
// Throws bonsai::Error for an empty span or one with no number in it.
int32_t argmax(std::span<const float> logits);

// The penalty stage on its own (llama.cpp semantics), in place. For each
// distinct token t in `recent` (ids, duplicates counted):
//   logit = logit <= 0 ? logit * repeat_penalty : logit / repeat_penalty
//   logit -= count(t) * frequency_penalty + presence_penalty
// `recent` is used as given (the caller applies the repeat_last_n window).
// Throws bonsai::Error when a token is negative or outside `logits`.
void apply_penalties(const SamplerParams &params, std::span<const int32_t> recent,
                     std::span<float> logits);

// One token of a distribution and its probability.
struct TokenProb {
  int32_t id = 0;
  float prob = 0.0f;
};

class Sampler {
public:
  // Validates the parameters (throws bonsai::Error) and seeds the generator.
  explicit Sampler(SamplerParams params);

  // Picks the next token from logits over the whole vocabulary (NaN logits
  // count as -inf). Does not accept the token: call accept() for every token
  // that enters the context, prompt tokens included, so penalties see them.
  // Throws bonsai::Error when the logits are empty, larger than INT32_MAX, all
  // -inf/NaN (unless greedy), or an accepted token lies outside them.
  int32_t sample(std::span<const float> logits);

  // Speculative decoding with a draft that proposed `proposed` for sure (a
  // prompt-lookup draft: q puts all its mass on it). Accepts it with
  // probability p(proposed), p being the distribution sample() draws from;
  // otherwise draws from p without it, renormalized. The result is
  // distributed exactly as sample()'s (the standard rule min(1, p/q), with
  // the rest drawn from (p - q)+). Greedy: the argmax, whatever was proposed.
  // Two uniform draws at most.
  int32_t sample_against(std::span<const float> logits, int32_t proposed);

  // The distribution sample() draws from (its surviving candidates, the
  // probabilities summing to 1), without drawing: for a draft model's q.
  // Greedy: all the mass on the argmax.
  std::vector<TokenProb> distribution(std::span<const float> logits);
  // One draw from `q` (one uniform), as sample() draws.
  int32_t draw_from(std::span<const TokenProb> q);
  // Speculative decoding with a draft that drew `proposed` from `q`: keeps
  // it with probability min(1, p/q), else draws from (p - q)+ renormalized;
  // the result is distributed as sample()'s. Greedy: the argmax.
  int32_t sample_against(std::span<const float> logits, int32_t proposed,
                         std::span<const TokenProb> q);

  // The logits after the penalty stage, as sample() would see them (the
  // logits themselves when no penalty applies). Valid until the next call.
  std::span<const float> penalized(std::span<const float> logits) { return with_penalties(logits); }

  // Records a token for the penalties (kept: the last repeat_last_n). Throws
  // bonsai::Error for a negative id.
  void accept(int32_t token);

  // Forgets accepted tokens and reseeds the generator with params().seed.
  void reset();

  const SamplerParams &params() const { return params_; }

private:
  struct Candidate {
    int32_t id;
    float logit;
    float prob;
  };
  std::span<const float> with_penalties(std::span<const float> logits);
  std::span<const float> prepare(std::span<const float> logits);
  void select_candidates(std::span<const float> logits);
  void softmax();
  void keep_nucleus();
  void keep_above_min_p();
  int32_t draw();
  double next_uniform(); // [0, 1), 53 random bits

  SamplerParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> recent_;       // last repeat_last_n accepted tokens, oldest first
  std::vector<float> penalized_;      // scratch: logits after penalties
  std::vector<Candidate> candidates_; // scratch: survivors of each stage
  bool sorted_ = false;               // candidates_ in decreasing (logit, -id) order
};

} // namespace bonsai
