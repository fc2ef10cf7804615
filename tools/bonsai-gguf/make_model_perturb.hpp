#pragma once
// make-model --perturb-of: a copy of a model in which a fraction of the
// blocks of every quantized matrix is replaced by other blocks of the same
// matrix, chosen at random. The copy agrees with the original less as the
// fraction grows: drafts of known agreement for speculative decoding
// (docs/speculative.md).
#include <cstdint>
#include <string>

namespace bonsai::tools {

struct PerturbSpec {
  std::string input;     // the model to copy
  std::string output;    // the copy
  double fraction = 0.0; // of each matrix's blocks, in [0, 1]
  uint64_t seed = 1;
};

// Writes the copy and prints what it did. Throws bonsai::Error.
void write_perturbed_copy(const PerturbSpec &spec);

} // namespace bonsai::tools
