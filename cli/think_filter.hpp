#pragma once
// Shows a reply's reasoning (<think> ... </think>, as Qwen3 writes it) as the
// user asked: as it is, dimmed (ANSI faint, for a terminal) or hidden. The
// reply streams in pieces that may split a tag, so the filter holds back
// what could still be the start of one.
#include <optional>
#include <string>
#include <string_view>

namespace bonsai::cli {

enum class ThinkingDisplay { show, dim, hide };

// --thinking's value ("show", "dim", "hide"); "" is dim on a terminal, else
// show. nullopt for any other word.
std::optional<ThinkingDisplay> parse_thinking_display(const std::string &choice, bool terminal);

class ThinkFilter {
public:
  explicit ThinkFilter(ThinkingDisplay display) : display_(display) {}
  // The text to print for `piece` (maybe empty, maybe with held-back text
  // of earlier pieces).
  std::string push(std::string_view piece);
  // What is still held back, at the end of the reply (and the style reset).
  std::string finish();
  // Whether the text so far opened a <think> block and has not closed it:
  // after finish(), the reply was cut off inside its reasoning.
  bool in_reasoning() const { return thinking_; }

private:
  std::string emit(std::string_view text) const;    // text in the current span's style
  std::string tag_text(std::string_view tag) const; // a tag, in the style it starts or ends
  ThinkingDisplay display_;
  bool thinking_ = false;
  std::string pending_;        // a possible tag prefix
  bool drop_newlines_ = false; // right after hidden reasoning
};

} // namespace bonsai::cli
