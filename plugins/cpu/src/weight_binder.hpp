#pragma once
// Resolves the weight handles of a model description, checking each one's
// shape and naming the field in every message; the weights it returns are
// marked as used by the model (free_weight refuses them).
#include <string>
#include <vector>

#include "model.hpp"
#include "plugin_error.hpp"

namespace bonsai::cpu {

class Binder {
public:
  // `call` names the ABI function in messages ("bind_model").
  Binder(const WeightLookup &lookup, BoundModel &model, const char *call = "bind_model")
      : lookup_(lookup), model_(model), call_(call) {}

  const Weight &matrix(const bonsai_weight *handle, const std::string &field, int64_t rows,
                       int64_t cols) {
    const Weight &w = resolve(handle, field);
    if (w.rows != rows || w.cols != cols)
      fail_invalid(strformat("%s: %s %s must be %lld rows x %lld cols", call_, field.c_str(),
                             w.label().c_str(), static_cast<long long>(rows),
                             static_cast<long long>(cols)));
    return w;
  }

  std::vector<float> vector(const bonsai_weight *handle, const std::string &field, int64_t n) {
    return floats(handle, field, 1, n);
  }

  // A small matrix (conv taps) as rows x cols f32 values.
  std::vector<float> floats(const bonsai_weight *handle, const std::string &field, int64_t rows,
                            int64_t cols) {
    const Weight &w = matrix(handle, field, rows, cols);
    std::vector<float> out(static_cast<size_t>(rows * cols));
    std::vector<uint8_t> scratch(w.row_bytes);
    for (int64_t r = 0; r < rows; ++r)
      dequantize_row(w.type, w.natural_row(r, scratch.data()), out.data() + r * cols, cols);
    return out;
  }

private:
  const Weight &resolve(const bonsai_weight *handle, const std::string &field) {
    if (handle == nullptr)
      fail_invalid(std::string(call_) + ": " + field + " is NULL");
    const Weight *w = lookup_(handle);
    if (w == nullptr)
      fail_invalid(std::string(call_) + ": " + field + " is not a weight of this context");
    model_.used.insert(w);
    return *w;
  }

  const WeightLookup &lookup_;
  BoundModel &model_;
  const char *call_;
};

} // namespace bonsai::cpu
