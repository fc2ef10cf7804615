// matmul: every claimed weight type against core's reference dequantize and
// a float64 dot product, over odd shapes and token counts.
//
// Tolerances, per output y = sum_c w_c x_c with l1 = sum_c |w_c x_c|:
//  - exact kernels: |y - ref| <= 1e-5 * l1, the classic backward-error bound
//    of an f32 dot product (n * 2^-24 * l1 for sequential summation; the
//    bound stays below that for the sizes tested, and double accumulation
//    is far inside it).
//  - fast kernels: activations may be rounded to int8 with one scale
//    d_b = max_b |x| / 127 per 128-value block, so each x_c moves by at most
//    d_b / 2 and |y - ref| <= sum_b (max_b |x| / 254) * sum_{c in b} |w_c|;
//    2 % slack for the f32 rounding of x / d_b plus 1e-5 * l1 for f32
//    accumulation. fp16 activations (relative error 2^-11 <= 1/254) also
//    fit. On top, the cosine of each call's outputs (>= 64 values) must be
//    >= 0.9995 (docs/abi.md, "Numerics").
#include <cmath>
#include <limits>

#include "bonsai/core/formats.hpp"
#include "plugin_checks.hpp"
#include "random_model.hpp"

namespace bonsai::conformance {
namespace {

struct Shape {
  int64_t rows;
  int64_t cols;
};
constexpr Shape kShapes[] = {{1, 128}, {3, 256}, {17, 384}, {64, 1024}, {131, 640}, {40, 2048}};
constexpr int kTokenCounts[] = {1, 2, 3, 7, 17, 70};
constexpr int kMaxBatch = 70;
constexpr double kFastCosine = 0.9995;

// Random activations in [-1, 1]; every third token has a few 4x outliers so
// per-block scales differ the way real activations do.
std::vector<float> random_input(int n_tokens, int64_t cols, Rng &rng) {
  std::vector<float> x(static_cast<size_t>(n_tokens * cols));
  for (float &v : x)
    v = static_cast<float>(rng.uniform(-1.0, 1.0));
  for (int t = 1; t < n_tokens; t += 3)
    for (int k = 0; k < 3; ++k)
      x[static_cast<size_t>(t * cols + rng.integer(0, static_cast<int>(cols) - 1))] *= 4.0f;
  return x;
}

struct Bound {
  double exact = 0.0;
  double allowed = 0.0;
};

Bound reference_output(const test::RefMatrix &w, const float *x, int64_t row, bool exact) {
  double sum = 0.0, l1 = 0.0, quant = 0.0;
  for (int64_t b = 0; b < w.cols; b += 128) {
    double amax = 0.0, w_abs = 0.0;
    for (int64_t c = b; c < b + 128; ++c) {
      const double wc = w.w[static_cast<size_t>(row * w.cols + c)];
      sum += wc * x[c];
      l1 += std::fabs(wc * x[c]);
      amax = std::max(amax, std::fabs(static_cast<double>(x[c])));
      w_abs += std::fabs(wc);
    }
    quant += amax / 254.0 * w_abs;
  }
  Bound bound;
  bound.exact = sum;
  bound.allowed = exact ? 1e-5 * l1 : 1.02 * quant + 1e-5 * l1;
  bound.allowed += std::numeric_limits<float>::min();
  return bound;
}

} // namespace

CheckResult PluginChecker::matmul(uint32_t type) const {
  const std::string type_label(type_name(type));
  CheckResult r{"matmul " + type_label};
  test::ContextConfig config;
  config.options = options_.context_options;
  config.n_threads = options_.n_threads;
  config.max_batch = kMaxBatch;
  test::ContextHandle ctx(api(), config);
  if (api().supports_type(ctx.get(), type) != BONSAI_OK) {
    r.skipped = true;
    r.note(type_label + " is not supported by this plugin");
    return r;
  }

  Rng rng(options_.seed ^ (uint64_t{type} << 32));
  double worst_ratio = 0.0, min_cosine = 1.0;
  int upload_index = 0;
  for (const Shape &shape : kShapes) {
    HostWeight w = random_weight(type, shape.rows, shape.cols, 1.0 / std::sqrt(double(shape.cols)),
                                 rng, /*max_q2_code=*/3);
    w.name = "matmul." + type_label;
    const test::RefMatrix ref = w.dequantized();
    const bonsai_weight_desc wd =
        w.desc(upload_index++ % 2 ? 0u : BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT);
    bonsai_weight *handle = nullptr;
    if (!r.expect(api().upload_weight(ctx.get(), &wd, &handle) == BONSAI_OK && handle,
                  "upload of a " + std::to_string(shape.rows) + " x " + std::to_string(shape.cols) +
                      " weight failed: " + ctx.last_error()))
      continue;
    for (int n : kTokenCounts) {
      if (n > 17 && shape.rows * shape.cols > 64 * 1024)
        continue; // keep the large-batch case to small matrices
      const std::vector<float> x = random_input(n, shape.cols, rng);
      std::vector<float> y(static_cast<size_t>(n * shape.rows),
                           std::numeric_limits<float>::quiet_NaN());
      bonsai_matmul_desc md{};
      md.struct_size = sizeof(md);
      md.weight = handle;
      md.n_tokens = n;
      md.x = x.data();
      md.y = y.data();
      const std::string where = std::to_string(shape.rows) + " x " + std::to_string(shape.cols) +
                                ", " + std::to_string(n) + " tokens";
      if (!r.expect(api().matmul(ctx.get(), &md) == BONSAI_OK,
                    "matmul " + where + " failed: " + ctx.last_error()))
        continue;
      double dot = 0.0, yy = 0.0, rr = 0.0;
      int reported = 0;
      for (int t = 0; t < n; ++t) {
        for (int64_t row = 0; row < shape.rows; ++row) {
          const Bound b = reference_output(ref, x.data() + t * shape.cols, row, options_.exact);
          const double got = y[static_cast<size_t>(t * shape.rows + row)];
          const double err = std::fabs(got - b.exact);
          if (!(err <= b.allowed) && reported++ < 3)
            r.fail("matmul " + where + ": y[" + std::to_string(t) + "][" + std::to_string(row) +
                   "] = " + std::to_string(got) + ", reference " + std::to_string(b.exact) +
                   ", error " + std::to_string(err) + " > bound " + std::to_string(b.allowed));
          worst_ratio = std::max(worst_ratio, err / b.allowed);
          dot += got * b.exact;
          yy += got * got;
          rr += b.exact * b.exact;
        }
      }
      if (n * shape.rows >= 64) {
        const double cosine = dot / std::sqrt(yy * rr);
        min_cosine = std::min(min_cosine, cosine);
        if (!options_.exact)
          r.expect(cosine >= kFastCosine,
                   "matmul " + where + ": cosine " + format_cosine(cosine) + " < 0.9995");
      }
    }
    r.expect(api().free_weight(ctx.get(), handle) == BONSAI_OK,
             "free_weight failed: " + ctx.last_error());
  }
  r.note("min cosine " + format_cosine(min_cosine) + ", worst error / bound " +
         std::to_string(worst_ratio));
  return r;
}

} // namespace bonsai::conformance
