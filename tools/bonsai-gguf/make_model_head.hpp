#pragma once
// make-model --head-of: a model that reads tokens in and out as a narrower
// model does. Its token embedding, LM head and final norm are the other
// model's, each row zero-padded to its own width. Zero columns leave RMSNorm's
// direction unchanged (only a constant factor), so with its layers quiet
// (--layer-gain near 0) the wider model ranks next tokens as the narrower
// one with quiet layers does: a draft of known agreement across two shapes,
// e.g. a 1.7B shape drafting for an 8B shape (docs/speculative.md). A Q1_0
// source's rows become the Q2_0 rows of the same values for a Q2_0 model
// (a 1-bit draft for a ternary model).
#include <cstdint>
#include <string>
#include <vector>

#include "bonsai/core/formats.hpp"

namespace bonsai::tools {

struct HeadRequest {
  std::string source;             // the narrower model
  GgmlType type = GgmlType::Q1_0; // the new model's matrix encoding
  int64_t hidden = 0;             // the new model's width
  int64_t vocab = 0;              // its embedding rows
  bool tied = false;              // its LM head is its embedding
};

struct BorrowedHead {
  int64_t source_hidden = 0;
  std::vector<uint8_t> token_embd;  // vocab rows of `hidden`, in `type`
  std::vector<uint8_t> output;      // the LM head likewise; empty when tied
  std::vector<uint8_t> output_norm; // hidden f32: the source's, then 1.0
};

// Reads and pads the source's tensors. Throws bonsai::Error naming what does
// not fit (encoding, vocabulary, width, a tied model with an untied source).
BorrowedHead borrow_head(const HeadRequest &request);

} // namespace bonsai::tools
