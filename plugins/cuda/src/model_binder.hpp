#pragma once
// What bind_model and bind_layered_model share: resolving the host's weight
// handles against the context's weights with their shapes checked, norm and
// small vectors as f32 on the device, and the allocations of a bound model.
#include <cstdint>
#include <string>

#include "model.hpp"

namespace bonsai::cuda {

struct ModelBinder {
  const Device &device;
  const Kernels &kernels;
  const WeightLookup &find;
  BoundModel &model;
  bool dry_run;     // validate only: no device memory is touched
  const char *call; // the entry point, for messages

  // A weight of exactly rows x cols; it becomes part of the model.
  const Weight &matrix(const bonsai_weight *handle, const std::string &what, int64_t rows,
                       int64_t cols);
  // A rows x cols weight as f32 on the device: F32 weights are used in
  // place, other types are decoded once with the embedding-lookup kernel.
  CUdeviceptr floats(const bonsai_weight *handle, const std::string &what, int64_t rows,
                     int64_t cols);
  // A norm vector (one row of n) as f32.
  CUdeviceptr vector(const bonsai_weight *handle, const std::string &what, int64_t n) {
    return floats(handle, what, 1, n);
  }
};

// Attention splits for the context length; the activations for max_batch
// tokens and slot 0 (after the layers are bound).
void set_attention_splits(BoundModel &m);
void allocate_activations(const Device &device, BoundModel &m);

} // namespace bonsai::cuda
