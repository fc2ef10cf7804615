// Fuzz target: JSON Schema compilation and the grammar matcher. The input is
// a schema, a NUL byte, then text fed to the matcher byte by byte.
//  - Compiling never fails other than with bonsai::Error (a refusal).
//  - Every byte the matcher takes leaves a state that can still be
//    completed: min_bytes_to_complete() stays finite, and 0 exactly when the
//    text is complete.
//  - From there, a byte that brings the end one closer always exists: taking
//    such bytes completes the text in exactly that many bytes, and the text
//    is then valid JSON (nlohmann's parser accepts it).
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bonsai/core/grammar.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace bonsai;
using bonsai::fuzz::require;

// The byte that completes the text soonest from `m`, or -1.
int closer_byte(const GrammarMatcher &m) {
  const int32_t need = m.min_bytes_to_complete();
  for (int b = 0; b < 256; ++b) {
    GrammarMatcher trial = m;
    const char c = static_cast<char>(b);
    if (trial.advance(std::string_view(&c, 1)) && trial.min_bytes_to_complete() == need - 1)
      return b;
  }
  return -1;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view input(reinterpret_cast<const char *>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view schema = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  std::optional<Grammar> grammar;
  try {
    grammar = Grammar::json_schema(schema);
  } catch (const Error &) {
    return 0; // a refusal, with its message
  }
  GrammarMatcher m(*grammar);
  std::string taken;
  for (const char c : text.substr(0, 256)) {
    GrammarMatcher next = m;
    if (!next.advance(std::string_view(&c, 1)))
      break;
    m = next;
    taken.push_back(c);
    const int32_t need = m.min_bytes_to_complete();
    require(need >= 0 && need < 1'000'000, "a taken byte left a state that cannot complete");
    require((need == 0) == m.complete(), "complete() and min_bytes_to_complete() disagree");
  }
  const int32_t need = m.min_bytes_to_complete();
  if (need > 4096)
    return 0; // a long shortest completion: fine, but slow to walk here
  for (int32_t left = need; left > 0; --left) {
    const int b = closer_byte(m);
    require(b >= 0, "no byte brings the end closer");
    const char c = static_cast<char>(b);
    require(m.advance(std::string_view(&c, 1)), "the closer byte was refused");
    taken.push_back(c);
  }
  require(m.complete(), "the shortest completion did not complete the text");
  require(nlohmann::json::accept(taken), "a complete text is not JSON");
  return 0;
}
