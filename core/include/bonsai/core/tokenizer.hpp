#pragma once
// Byte-level BPE tokenizer for Qwen2/Qwen3 vocabularies as llama.cpp stores them
// in GGUF (`tokenizer.ggml.model = gpt2`, `tokenizer.ggml.pre = qwen2`).
//
// Encoding: split out added tokens -> NFC -> Qwen2 pre-tokenizer regex -> GPT-2
// byte-to-unicode mapping -> BPE by merge rank. It reproduces the Hugging Face
// tokenizer (and llama.cpp, except that llama.cpp skips NFC).
//
// Added tokens: CONTROL tokens (`<|im_start|>`, `<|endoftext|>`, ...) are matched
// in the text only when `parse_special` is true; USER_DEFINED tokens (`<think>`,
// `<tool_call>`, ...) are always matched, as Hugging Face and llama.cpp do.
//
// A Tokenizer is immutable after construction: copies are cheap (shared state)
// and every const member may be called from several threads at once.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bonsai/core/text_span.hpp"

namespace bonsai {

namespace gguf {
class File;
}

// Values of `tokenizer.ggml.token_type` (llama.cpp's numbering).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// Everything the tokenizer needs, independent of where it came from.
struct TokenizerData {
  std::string source;                 // names the origin (file path) in error messages
  std::string model = "gpt2";         // tokenizer.ggml.model
  std::string pre = "qwen2";          // tokenizer.ggml.pre
  std::vector<std::string> tokens;    // vocabulary entries, byte-level encoded
  std::vector<TokenType> token_types; // same length as tokens; empty = all Normal
  std::vector<std::string> merges;    // "left right", highest priority first
  int32_t bos_id = -1;                // -1 = not set
  int32_t eos_id = -1;
  int32_t pad_id = -1;
  std::string chat_template; // tokenizer.chat_template, may be empty
};

class Tokenizer {
public:
  // Reads the tokenizer.* metadata; throws bonsai::Error naming the file and
  // key when something is missing, malformed or unsupported.
  static Tokenizer from_gguf(const gguf::File &file);
  // Validates `data` (supported model/pre, merges that resolve to tokens, ids
  // in range) and builds the lookup tables. Throws bonsai::Error.
  explicit Tokenizer(TokenizerData data);

  // Throws bonsai::Error when `text` is not valid UTF-8.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;
  // Control tokens only where the caller put them: each of `control_spans`
  // (in order, not overlapping) must hold exactly one CONTROL token and
  // becomes its id; the text around them is encoded as with parse_special
  // false. Text whose control-token spellings all lie in the spans gets the
  // same ids as encode(text, true). Throws bonsai::Error for invalid UTF-8
  // or a span out of order, out of range or not a control token.
  std::vector<int32_t> encode(std::string_view text, std::span<const TextSpan> control_spans) const;
  // Concatenated bytes of the tokens (may be invalid UTF-8 for arbitrary id
  // sequences). Special tokens decode to their text, UNUSED (padding) tokens
  // to nothing. Throws bonsai::Error on an id outside [0, n_vocab()).
  std::string decode(std::span<const int32_t> ids) const;

  int32_t n_vocab() const;
  // The vocabulary entry as stored (byte-level form, e.g. "Ġworld").
  const std::string &token_text(int32_t id) const;
  // What the token decodes to (e.g. " world"); may be a partial UTF-8 sequence.
  std::string_view token_bytes(int32_t id) const;
  TokenType token_type(int32_t id) const;
  bool is_special(int32_t id) const; // CONTROL or USER_DEFINED
  // Id of the vocabulary entry spelled exactly `text`, or -1.
  int32_t token_id(std::string_view text) const;

  int32_t bos_id() const; // -1 when the file sets none
  int32_t eos_id() const;
  int32_t pad_id() const;
  int32_t im_start_id() const;  // `<|im_start|>` or -1
  int32_t im_end_id() const;    // `<|im_end|>` or -1
  int32_t endoftext_id() const; // `<|endoftext|>` or -1
  // Ids that end a generated turn: eos, `<|im_end|>`, `<|endoftext|>` (those
  // present, without duplicates, ascending).
  std::vector<int32_t> stop_ids() const;

  const std::string &chat_template() const;

private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// Turns generated ids into text piece by piece. A character split across
// tokens is held back until its last byte arrives, so every returned chunk is
// valid UTF-8; bytes that can never form a character become U+FFFD.
class StreamDecoder {
public:
  explicit StreamDecoder(Tokenizer tokenizer);

  // Text completed by this token (possibly empty). Throws on an invalid id.
  std::string push(int32_t id);
  // Whatever is still held back, an incomplete trailing character replaced by
  // U+FFFD; the decoder is then empty and can be reused.
  std::string flush();
  // Drops anything held back.
  void reset() { pending_.clear(); }

private:
  Tokenizer tokenizer_;
  std::string pending_;
};

} // namespace bonsai
