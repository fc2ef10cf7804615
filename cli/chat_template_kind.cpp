#include "chat_template_kind.hpp"

#include "bonsai/core/chat_template.hpp"

namespace bonsai::cli {

std::string describe_chat_template(const std::string &template_text) {
  std::string why;
  const auto kind =
      detect_chat_template(template_text, [&why](std::string_view line) { why = line; });
  if (kind == ChatTemplateKind::Qwen3ChatML)
    return "Qwen3 ChatML (with <think> handling)";
  return "plain ChatML fallback (" + why + ")";
}

} // namespace bonsai::cli
