#pragma once
// Renders a conversation into the prompt text a Qwen3 model was trained on.
// No Jinja engine: the template embedded in the GGUF is only inspected to pick
// one of the renderers implemented here.
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bonsai/core/text_span.hpp"

namespace bonsai {

// A call an assistant turn made (OpenAI's tool_calls[i].function).
struct ToolCall {
  std::string name;
  std::string arguments; // JSON text, written into the prompt as it is
};

struct ChatMessage {
  std::string role; // "system", "user", "assistant" or "tool"
  std::string content;
  std::vector<ToolCall> tool_calls = {}; // an assistant turn's calls, after its content
};

enum class ChatTemplateKind {
  Qwen3ChatML,    // Qwen3's template: ChatML plus <think> handling
  ChatMLFallback, // plain ChatML, for templates not recognised
};

struct ChatOptions {
  bool add_generation_prompt = true; // end with the opening of an assistant turn
  bool enable_thinking = true;       // false: pre-fill an empty <think></think> block
  // Tools the model may call, each as the JSON text the template lists in the
  // system turn (Qwen3's template writes Python's json.dumps of each tool).
  std::vector<std::string> tools = {};
};

// Receives one human-readable warning line; core has no logging of its own.
using ChatWarningSink = std::function<void(std::string_view)>;

// Qwen3 is recognised by the ChatML markers together with the <think> markers.
// Anything else (including an empty template) selects ChatMLFallback and
// reports why through `warn` (if set).
ChatTemplateKind detect_chat_template(std::string_view template_text,
                                      const ChatWarningSink &warn = {});

// The rendered prompt and where in it the template wrote its control markers
// (`<|im_start|>`, `<|im_end|>`), in order. Only those spans may become
// control tokens (Tokenizer::encode with spans): a message that contains
// marker text cannot open or close a turn. `<think>` and `</think>` are not
// listed; they are user-defined tokens, matched wherever they appear.
struct ChatPrompt {
  std::string text;
  std::vector<TextSpan> control_spans;
};

// Qwen3ChatML reproduces Qwen3's Jinja template: a leading system message
// (with the tool list after it when there are tools), `<think>` reasoning
// stripped from assistant turns before the last user query, an assistant
// turn's calls as `<tool_call>` blocks, consecutive tool results grouped into
// one user turn. Roles other than system/user/assistant/tool throw
// bonsai::Error. ChatMLFallback writes `<|im_start|>role\ncontent<|im_end|>\n`
// for every message and ignores enable_thinking; tools, calls and tool
// results it writes as Qwen3 does (every Bonsai model is a Qwen3).
ChatPrompt render_chat_prompt(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                              const ChatOptions &options = {});

// The text alone: render_chat_prompt(...).text.
std::string apply_chat_template(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                                const ChatOptions &options = {});

} // namespace bonsai
