#include "decode_choice.hpp"

#include <exception>

#include "options.hpp"
#include "plugin_error.hpp"

namespace bonsai::cuda {

std::string choice_options(const DecodeChoice &choice) {
  if (!choice.persistent)
    return "decode=graph";
  const PersistentVariant defaults;
  std::string text = "decode=persistent";
  if (choice.variant.head != defaults.head)
    text += choice.variant.head ? ";persistent_head=on" : ";persistent_head=off";
  if (choice.variant.prefetch != defaults.prefetch)
    text += choice.variant.prefetch ? ";persistent_prefetch=next" : ";persistent_prefetch=off";
  if (choice.variant.balanced != defaults.balanced)
    text += choice.variant.balanced ? ";persistent_shares=balanced" : ";persistent_shares=tiles";
  if (choice.variant.stream != defaults.stream)
    text += choice.variant.stream > 1 ? strformat(";persistent_stream=%d", choice.variant.stream)
                                      : std::string(";persistent_stream=off");
  if (choice.variant.fused != defaults.fused)
    text += choice.variant.fused ? ";persistent_qkv=fused" : ";persistent_qkv=apart";
  return text;
}

std::optional<DecodeChoice> choice_from_options(const std::string &text) {
  ContextOptions parsed;
  try {
    parsed = parse_options(text.c_str());
  } catch (const std::exception &) {
    return std::nullopt;
  }
  if (parsed.decode == DecodeMode::automatic || !parsed.warnings.empty())
    return std::nullopt;
  DecodeChoice choice;
  choice.persistent = parsed.decode == DecodeMode::persistent;
  if (choice.persistent)
    choice.variant = {parsed.persistent_head, parsed.persistent_prefetch,
                      parsed.tuning.balanced_shares, parsed.tuning.stream_slots,
                      parsed.tuning.fused_qkv_attention};
  // Anything else in the text (another option, a repeat, another order)
  // makes it a name this build did not write.
  if (choice_options(choice) != text)
    return std::nullopt;
  return choice;
}

} // namespace bonsai::cuda
