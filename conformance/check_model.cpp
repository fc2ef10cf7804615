// Full-layer checks on small random models: encode vs the float64 reference
// forward, KV truncation reproducibility and argmax semantics.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "bonsai/core/formats.hpp"
#include "bound_model.hpp"
#include "golden.hpp"
#include "plugin_checks.hpp"
#include "random_model.hpp"
#include "step_runner.hpp"

namespace bonsai::conformance {
namespace {

constexpr double kExactCosine = 0.99999;
constexpr double kFastCosine = 0.9995;
constexpr double kExactMaxAbs = 1e-4; // relative to the largest |reference logit|

struct Agreement {
  double min_cosine = 1.0;
  int top1_equal = 0;
  int positions = 0;
};

// Compares logits of consecutive positions with the reference's.
void compare_logits(const std::vector<float> &got, const std::vector<std::vector<double>> &ref,
                    size_t first, const std::string &what, bool exact, CheckResult &r,
                    Agreement &a) {
  const size_t n_vocab = ref.front().size();
  for (size_t i = 0; i < got.size() / n_vocab; ++i) {
    const float *g = got.data() + i * n_vocab;
    const std::vector<double> &e = ref[first + i];
    const double cos = test::cosine(g, e.data(), n_vocab);
    double max_ref = 0.0, max_err = 0.0;
    for (size_t v = 0; v < n_vocab; ++v) {
      max_ref = std::max(max_ref, std::fabs(e[v]));
      max_err = std::max(max_err, std::fabs(g[v] - e[v]));
    }
    a.min_cosine = std::min(a.min_cosine, cos);
    a.top1_equal += test::argmax(g, n_vocab) == test::argmax(e.data(), n_vocab);
    ++a.positions;
    const std::string where = what + " position " + std::to_string(first + i);
    if (exact) {
      r.expect(cos >= kExactCosine, where + ": cosine " + format_cosine(cos) + " < 0.99999");
      r.expect(max_err <= kExactMaxAbs * max_ref,
               where + ": max |error| " + std::to_string(max_err) + " > 1e-4 * max |logit| " +
                   std::to_string(max_ref));
    } else {
      r.expect(cos >= kFastCosine, where + ": cosine " + format_cosine(cos) + " < 0.9995");
    }
  }
}

} // namespace

CheckResult PluginChecker::layer_encode(uint32_t type) const {
  CheckResult r{"layer_encode " + std::string(type_name(type))};
  Rng rng(options_.seed + type);
  BoundSetup s = bind_random_model(api(), options_, type, rng, r);
  if (skip_unbound(s, r))
    return r;
  const ModelShape &shape = s.model.shape;
  const std::vector<int32_t> tokens = random_tokens(9, shape.n_vocab, rng);
  const test::RefModel ref_model = s.model.reference();
  test::RefForward forward(ref_model);
  std::vector<std::vector<double>> ref;
  for (int32_t t : tokens)
    ref.push_back(forward.step(t));

  test::StepRunner run(api(), s.ctx->get(), shape.n_layer, shape.n_vocab);
  Agreement a;
  try {
    compare_logits(run.step(tokens), ref, 0, "one-step prefill", options_.exact, r, a);
    r.expect(api().kv_reset(s.ctx->get()) == BONSAI_OK, "kv_reset failed");
    for (size_t i = 0; i < tokens.size(); ++i)
      compare_logits(run.step({tokens[i]}), ref, i, "token-by-token", options_.exact, r, a);
    r.expect(api().kv_reset(s.ctx->get()) == BONSAI_OK, "kv_reset failed");
    const std::vector<int32_t> head(tokens.begin(), tokens.begin() + 5);
    const std::vector<int32_t> tail(tokens.begin() + 5, tokens.end());
    compare_logits(run.step(head), ref, 0, "chunked prefill", options_.exact, r, a);
    compare_logits(run.step(tail), ref, 5, "chunked prefill", options_.exact, r, a);
  } catch (const std::exception &e) {
    r.fail(e.what());
  }
  r.note("min cosine " + format_cosine(a.min_cosine) + ", top-1 agreement " +
         std::to_string(a.top1_equal) + "/" + std::to_string(a.positions));
  return r;
}

CheckResult PluginChecker::kv_truncate_redecode() const {
  CheckResult r{"kv_truncate_redecode"};
  Rng rng(options_.seed + 101);
  BoundSetup s = bind_random_model(api(), options_, preferred_type(*this), rng, r);
  if (skip_unbound(s, r))
    return r;
  const ModelShape &shape = s.model.shape;
  bonsai_context *ctx = s.ctx->get();
  const std::vector<int32_t> prompt = random_tokens(6, shape.n_vocab, rng);
  const std::vector<int32_t> next = random_tokens(3, shape.n_vocab, rng);
  test::StepRunner run(api(), ctx, shape.n_layer, shape.n_vocab);
  const auto length = [&] {
    int32_t n = -1;
    r.expect(api().kv_length(ctx, &n) == BONSAI_OK, "kv_length failed");
    return n;
  };
  try {
    const std::vector<float> prefill = run.step(prompt);
    std::vector<std::vector<float>> first;
    for (int32_t t : next)
      first.push_back(run.step({t}));
    r.expect(length() == 9, "kv_length is " + std::to_string(length()) + " after 9 tokens");

    r.expect(api().kv_truncate(ctx, 6) == BONSAI_OK, "kv_truncate(6) failed");
    r.expect(length() == 6, "kv_length is " + std::to_string(length()) + " after kv_truncate(6)");
    for (size_t i = 0; i < next.size(); ++i)
      r.expect(bitwise_equal(run.step({next[i]}), first[i]),
               "token " + std::to_string(6 + i) +
                   " re-decoded after kv_truncate(6) gives "
                   "different logits (same kernels must give identical bits)");

    r.expect(api().kv_truncate(ctx, 10) == BONSAI_ERR_INVALID_ARGUMENT,
             "kv_truncate past kv_length is not INVALID_ARGUMENT");
    r.expect(api().kv_truncate(ctx, -1) == BONSAI_ERR_INVALID_ARGUMENT,
             "kv_truncate(-1) is not INVALID_ARGUMENT");

    // The continuation as one batched step: same kernels, other batching.
    r.expect(api().kv_truncate(ctx, 6) == BONSAI_OK, "kv_truncate(6) failed");
    const std::vector<float> batched = run.step(next);
    const size_t n_vocab = static_cast<size_t>(shape.n_vocab);
    for (size_t i = 0; i < next.size(); ++i) {
      const double cos = test::cosine(batched.data() + i * n_vocab, first[i].data(), n_vocab);
      r.expect(cos >= (options_.exact ? kExactCosine : kFastCosine),
               "batched continuation position " + std::to_string(6 + i) + ": cosine " +
                   format_cosine(cos) + " to the token-by-token logits");
    }

    r.expect(api().kv_truncate(ctx, 0) == BONSAI_OK, "kv_truncate(0) failed");
    r.expect(bitwise_equal(run.step(prompt), prefill),
             "prefill after kv_truncate(0) differs from the first prefill");
    r.expect(api().kv_reset(ctx) == BONSAI_OK, "kv_reset failed");
    r.expect(length() == 0, "kv_length is not 0 after kv_reset");
    r.expect(bitwise_equal(run.step(prompt), prefill),
             "prefill after kv_reset differs from the first prefill");
  } catch (const std::exception &e) {
    r.fail(e.what());
  }
  return r;
}

CheckResult PluginChecker::argmax_matches_logits() const {
  CheckResult r{"argmax_matches_logits"};
  const uint32_t type = preferred_type(*this);
  Rng rng(options_.seed + 202);
  BoundSetup s = bind_random_model(api(), options_, type, rng, r);
  if (skip_unbound(s, r))
    return r;
  const ModelShape &shape = s.model.shape;
  const size_t n_vocab = static_cast<size_t>(shape.n_vocab);
  bonsai_context *ctx = s.ctx->get();
  test::StepRunner run(api(), ctx, shape.n_layer, shape.n_vocab);
  const std::vector<int32_t> tokens = random_tokens(5, shape.n_vocab, rng);

  // Rebinds the model with another LM head, then runs `tokens` twice: with
  // logits and argmax, and with argmax alone. Returns the logits and ids.
  struct HeadRun {
    std::vector<float> logits;
    std::vector<int32_t> ids;
  };
  const auto check_head = [&](const HostWeight &head, const std::string &what) {
    bonsai_weight *handle = nullptr;
    const bonsai_weight_desc wd = head.desc(0);
    r.expect(api().upload_weight(ctx, &wd, &handle) == BONSAI_OK,
             "upload of the " + what + " failed");
    bonsai_model_desc desc = s.uploaded->desc();
    if (handle != nullptr)
      desc.lm_head = handle;
    r.expect(api().bind_model(ctx, &desc) == BONSAI_OK, "bind_model with the " + what + " failed");
    std::vector<int32_t> ids, ids_only;
    const std::vector<float> logits = run.step(tokens, true, &ids);
    r.expect(api().kv_reset(ctx) == BONSAI_OK, "kv_reset failed");
    run.step(tokens, false, &ids_only);
    for (size_t i = 0; i < tokens.size(); ++i) {
      const int32_t expected = test::argmax(logits.data() + i * n_vocab, n_vocab);
      r.expect(ids[i] == expected, what + ": argmax " + std::to_string(ids[i]) +
                                       " != argmax of the returned logits " +
                                       std::to_string(expected) + " at token " + std::to_string(i));
      r.expect(ids_only[i] == expected,
               what + ": argmax without logits " + std::to_string(ids_only[i]) +
                   " != " + std::to_string(expected) + " at token " + std::to_string(i));
    }
    return HeadRun{logits, ids};
  };

  try {
    check_head(s.model.lm_head, "random LM head");

    // Ties: every row is a copy of one of three quantized rows (0.5 r, 2 r,
    // -2 r). Rows 5 and 9 hold 2 r, rows 4 and 7 hold -2 r, so the largest
    // logit is shared by rows 5 and 9 or by rows 4 and 7: the lowest wins.
    const GgmlType t = static_cast<GgmlType>(type);
    std::vector<float> base(static_cast<size_t>(shape.n_embd));
    for (float &v : base)
      v = static_cast<float>(rng.uniform(-1.0, 1.0) / 16.0);
    const size_t row_size = row_bytes(t, shape.n_embd);
    const auto quantized = [&](float factor) {
      std::vector<float> scaled(base);
      for (float &v : scaled)
        v *= factor;
      std::vector<uint8_t> bytes(row_size);
      quantize_row(t, scaled.data(), bytes.data(), shape.n_embd);
      return bytes;
    };
    const std::vector<uint8_t> small = quantized(0.5f), big = quantized(2.0f),
                               negative = quantized(-2.0f);
    HostWeight tie;
    tie.type = type;
    tie.rows = shape.n_vocab;
    tie.cols = shape.n_embd;
    tie.name = "tie LM head";
    for (int row = 0; row < shape.n_vocab; ++row) {
      const std::vector<uint8_t> &src = (row == 5 || row == 9)   ? big
                                        : (row == 4 || row == 7) ? negative
                                                                 : small;
      tie.bytes.insert(tie.bytes.end(), src.begin(), src.end());
    }
    r.expect(api().kv_reset(ctx) == BONSAI_OK, "kv_reset failed");
    const std::vector<float> logits = check_head(tie, "tie LM head").logits;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const float *l = logits.data() + i * n_vocab;
      r.expect(l[5] == l[9] && l[4] == l[7], "identical LM head rows gave different logits");
      const int32_t winner = test::argmax(l, n_vocab);
      r.expect(winner == 4 || winner == 5, "tie LM head: the largest logit is at row " +
                                               std::to_string(winner) + ", expected 4 or 5");
    }

    // All rows equal: every logit ties, so the answer is 0.
    HostWeight flat = tie;
    flat.name = "flat LM head";
    flat.bytes.clear();
    for (int row = 0; row < shape.n_vocab; ++row)
      flat.bytes.insert(flat.bytes.end(), big.begin(), big.end());
    r.expect(api().kv_reset(ctx) == BONSAI_OK, "kv_reset failed");
    const HeadRun flat_run = check_head(flat, "flat LM head");
    for (size_t i = 0; i < flat_run.ids.size(); ++i) {
      const float *l = flat_run.logits.data() + i * n_vocab;
      r.expect(std::equal(l + 1, l + n_vocab, l), "identical LM head rows gave different logits");
      r.expect(flat_run.ids[i] == 0, "flat LM head: argmax " + std::to_string(flat_run.ids[i]) +
                                         " where every logit ties (expected 0)");
    }
  } catch (const std::exception &e) {
    r.fail(e.what());
  }
  return r;
}

} // namespace bonsai::conformance
