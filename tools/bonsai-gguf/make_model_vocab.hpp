#pragma once
// The tokenizer metadata of a synthetic model: every tokenizer.* key of a
// vocabulary GGUF, fitted to the model's n_vocab rows.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bonsai/core/gguf.hpp"

namespace bonsai::tools {

struct FittedVocab {
  std::vector<std::pair<std::string, gguf::Value>> keys; // tokenizer.*, source order
  int64_t source_tokens = 0;                             // tokens in the vocabulary file
  int64_t padded_tokens = 0;                             // "[PAD{id}]" entries added
  int64_t dropped_tokens = 0; // normal tokens cut off by a smaller n_vocab
  int64_t source_merges = 0;
  int64_t kept_merges = 0;
  std::vector<std::string> dropped_keys; // special-id keys whose token was cut
};

// Copies every tokenizer.* key of `vocab` and makes the token list exactly
// n_vocab long:
//  - n_vocab >= the file's token count: append "[PAD{id}]" tokens of type
//    UNUSED (5) (score -1000 when the file has scores), as real files do.
//  - n_vocab < the count: keep every control/user-defined token (token_type
//    other than NORMAL 1 and UNUSED 5) and as many normal tokens as fit, the
//    first ones in id order; drop the file's own padding (UNUSED) and re-pad
//    if room is left. Kept tokens are renumbered densely in their original
//    order; only merges whose two parts and result are all kept survive;
//    tokenizer.ggml.*_token_id keys are remapped (dropped when their token
//    was cut). At least 256 normal tokens must remain (the byte alphabet of a
//    byte-level BPE).
// Throws bonsai::Error "<vocab path>: <problem>" when the file has no token
// list, its per-token arrays disagree in length, or n_vocab is too small.
FittedVocab fit_vocabulary(const gguf::File &vocab, int64_t n_vocab);

} // namespace bonsai::tools
