#include "make_model_perturb.hpp"

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"

namespace bonsai::tools {
namespace {

// A quantized weight matrix: its blocks are self-contained, so any block of
// it is a valid value for any other.
bool has_blocks(const gguf::TensorInfo &t) {
  return t.dims.size() >= 2 && traits_of(t.type()).block_elements > 1 && t.nbytes > 0;
}

} // namespace

void write_perturbed_copy(const PerturbSpec &spec) {
  if (!(spec.fraction >= 0.0 && spec.fraction <= 1.0))
    throw Error("--perturb must be in [0, 1]");
  const gguf::File file = gguf::File::open(spec.input);
  gguf::Writer w;
  for (const auto &[key, value] : file.metadata())
    w.set(key, value);
  uint64_t blocks = 0, replaced = 0;
  for (const gguf::TensorInfo &t : file.tensors()) {
    const std::span<const uint8_t> bytes(t.data, t.nbytes);
    if (!has_blocks(t)) {
      w.add_tensor_borrowed(t.name, t.type(), t.dims, bytes);
      continue;
    }
    const size_t block_bytes = traits_of(t.type()).block_bytes;
    const size_t n = t.nbytes / block_bytes;
    std::vector<uint8_t> out(bytes.begin(), bytes.end());
    // Each tensor its own stream, so that the copy does not depend on the
    // order of the tensors.
    std::seed_seq seq{spec.seed, static_cast<uint64_t>(std::hash<std::string>{}(t.name))};
    std::mt19937_64 rng(seq);
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    std::uniform_int_distribution<size_t> any(0, n - 1);
    for (size_t b = 0; b < n; ++b) {
      if (coin(rng) >= spec.fraction)
        continue;
      std::memcpy(out.data() + b * block_bytes, bytes.data() + any(rng) * block_bytes, block_bytes);
      ++replaced;
    }
    blocks += n;
    w.add_tensor(t.name, t.type(), t.dims, std::move(out));
  }
  w.write(spec.output);
  std::printf("wrote %s: %llu of %llu blocks replaced by others of their matrix (%.2f %%), seed "
              "%llu\n",
              spec.output.c_str(), static_cast<unsigned long long>(replaced),
              static_cast<unsigned long long>(blocks),
              blocks > 0 ? 100.0 * static_cast<double>(replaced) / static_cast<double>(blocks)
                         : 0.0,
              static_cast<unsigned long long>(spec.seed));
}

} // namespace bonsai::tools
