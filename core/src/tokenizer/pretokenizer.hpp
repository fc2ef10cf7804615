#pragma once
// The Qwen2 pre-tokenizer: a regex that cuts text into words, numbers,
// punctuation runs and whitespace before BPE sees it (BPE never merges across
// these pieces).
#include <string_view>
#include <vector>

namespace bonsai::tokenizer_detail {

class Qwen2PreTokenizer {
public:
  Qwen2PreTokenizer(); // compiles (and JIT-compiles) the pattern; throws bonsai::Error
  ~Qwen2PreTokenizer();
  Qwen2PreTokenizer(const Qwen2PreTokenizer &) = delete;
  Qwen2PreTokenizer &operator=(const Qwen2PreTokenizer &) = delete;

  // Appends the pieces of `text` (valid UTF-8) in order; together they cover
  // `text` exactly. Thread-safe.
  void split(std::string_view text, std::vector<std::string_view> &pieces) const;

private:
  struct Compiled;
  Compiled *compiled_;
};

} // namespace bonsai::tokenizer_detail
