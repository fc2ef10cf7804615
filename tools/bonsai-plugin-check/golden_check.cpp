#include "golden_check.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <vector>

#include "bonsai/engine.hpp"
#include "golden.hpp"

namespace bonsai::plugin_check {
namespace {

constexpr int kGoldenVocab = 2048;
constexpr double kExactCosine = 0.99999;

std::string format_fraction(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", value);
  return text;
}

// Prefill of the 48 prompt tokens with every position's logits.
void check_logits(Session &session, const test::GoldenCase &golden, const GoldenOptions &options,
                  conformance::CheckResult &r) {
  const EvalResult out = session.eval(golden.prompt, {.all_logits = true});
  if (!r.expect(out.n_outputs == static_cast<int32_t>(golden.prompt.size()) &&
                    out.n_vocab == kGoldenVocab,
                "eval returned " + std::to_string(out.n_outputs) + " rows of " +
                    std::to_string(out.n_vocab) + " logits"))
    return;
  double min_cosine = 1.0;
  int worst = 0, top1 = 0;
  for (int32_t i = 0; i < out.n_outputs; ++i) {
    const float *got = out.row(i).data();
    const float *ref = golden.ref_logits.data() + static_cast<size_t>(i) * kGoldenVocab;
    const double cos = test::cosine(got, ref, kGoldenVocab);
    if (cos < min_cosine) {
      min_cosine = cos;
      worst = i;
    }
    top1 += test::argmax(got, kGoldenVocab) == test::argmax(ref, kGoldenVocab);
  }
  const double top1_rate = double(top1) / out.n_outputs;
  const std::string measured = "logits: min cosine " + conformance::format_cosine(min_cosine) +
                               " (position " + std::to_string(worst) + "), top-1 agreement " +
                               std::to_string(top1) + "/" + std::to_string(out.n_outputs);
  r.note(measured);
  if (options.exact) {
    r.expect(min_cosine >= kExactCosine, measured + ": cosine below 0.99999");
  } else {
    r.expect(min_cosine >= options.fast_cosine,
             measured + ": cosine below " + conformance::format_cosine(options.fast_cosine));
    r.expect(top1_rate >= options.fast_top1, measured + ": top-1 agreement " +
                                                 format_fraction(top1_rate) + " below " +
                                                 format_fraction(options.fast_top1));
  }
}

// 8 prompt tokens, then 24 argmax ids each fed back (as the reference did).
void check_greedy(Session &session, const test::GoldenCase &golden, bool exact,
                  conformance::CheckResult &r) {
  session.reset();
  std::vector<int32_t> generated = {session.eval_argmax(golden.greedy_prompt)};
  while (generated.size() < golden.greedy.size())
    generated.push_back(session.eval_argmax(std::vector<int32_t>{generated.back()}));
  const auto mismatch = std::mismatch(generated.begin(), generated.end(), golden.greedy.begin());
  const size_t prefix = static_cast<size_t>(mismatch.first - generated.begin());
  const std::string measured = "greedy: " + std::to_string(prefix) + "/" +
                               std::to_string(golden.greedy.size()) +
                               " ids equal the reference before the first difference";
  r.note(measured);
  if (exact && prefix != golden.greedy.size())
    r.fail(measured + " (id " + std::to_string(*mismatch.first) + " where the reference has " +
           std::to_string(*mismatch.second) + ")");
}

} // namespace

conformance::CheckResult check_golden_model(const GoldenOptions &options) {
  conformance::CheckResult r{"golden " + options.model_name};
  try {
    const test::GoldenCase golden =
        test::load_golden_case(options.data_dir.string(), options.model_name, kGoldenVocab);
    EngineOptions engine_options;
    engine_options.backend = options.plugin_path;
    engine_options.plugin_options = options.plugin_options;
    engine_options.n_threads = options.n_threads;
    engine_options.n_ctx = 64;
    engine_options.n_batch = 64;
    const Engine engine = Engine::open(golden.gguf_path, engine_options);
    Session session = engine.create_session();
    r.note(session.plugin_runs_layers()
               ? "the plugin runs whole layers (bind_model or bind_layered_model OK)"
               : "the host runs the layers over the plugin's matmul (bind_model UNSUPPORTED)");
    check_logits(session, golden, options, r);
    check_greedy(session, golden, options.exact, r);
  } catch (const std::exception &e) {
    r.fail(e.what());
  }
  return r;
}

} // namespace bonsai::plugin_check
