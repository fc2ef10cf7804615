#include "bonsai/core/chat_template.hpp"

#include "bonsai/core/error.hpp"

namespace bonsai {

namespace {

constexpr std::string_view kImStart = "<|im_start|>";
constexpr std::string_view kImEnd = "<|im_end|>";
constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string_view lstrip_newlines(std::string_view s) {
  const size_t first = s.find_first_not_of('\n');
  return first == std::string_view::npos ? std::string_view{} : s.substr(first);
}

std::string_view rstrip_newlines(std::string_view s) {
  const size_t last = s.find_last_not_of('\n');
  return last == std::string_view::npos ? std::string_view{} : s.substr(0, last + 1);
}

// Appends a control marker and records where it stands.
void append_marker(ChatPrompt &out, std::string_view marker) {
  out.control_spans.push_back({out.text.size(), out.text.size() + marker.size()});
  out.text.append(marker);
}

void append_turn(ChatPrompt &out, std::string_view role, std::string_view content) {
  append_marker(out, kImStart);
  out.text.append(role).append("\n").append(content);
  append_marker(out, kImEnd);
  out.text.append("\n");
}

// A user message that only carries tool output does not count as a query.
bool is_tool_response(const ChatMessage &m) {
  std::string_view c = m.content;
  return c.starts_with("<tool_response>") && c.ends_with("</tool_response>");
}

// Index of the last real user query; assistant turns after it keep their
// reasoning. With no such query, the template uses the last index.
size_t last_query_index(std::span<const ChatMessage> messages) {
  for (size_t i = messages.size(); i-- > 0;)
    if (messages[i].role == "user" && !is_tool_response(messages[i]))
      return i;
  return messages.empty() ? 0 : messages.size() - 1;
}

struct AssistantParts {
  std::string_view reasoning;
  std::string_view content;
};

// Splits "<think>r</think>c" the way the template does with Python's split():
// content follows the last </think>, reasoning sits between the last <think>
// before the first </think> and that </think>.
AssistantParts split_reasoning(std::string_view text) {
  const size_t first_close = text.find(kThinkClose);
  if (first_close == std::string_view::npos)
    return {{}, text};
  const size_t last_close = text.rfind(kThinkClose);
  AssistantParts parts;
  parts.content = lstrip_newlines(text.substr(last_close + kThinkClose.size()));
  std::string_view before = rstrip_newlines(text.substr(0, first_close));
  if (const size_t open = before.rfind(kThinkOpen); open != std::string_view::npos)
    before = before.substr(open + kThinkOpen.size());
  parts.reasoning = lstrip_newlines(before);
  return parts;
}

// The system turn that lists the tools, after the first system message's
// content when there is one.
void append_tools_turn(ChatPrompt &out, const std::vector<std::string> &tools,
                       const ChatMessage *system) {
  append_marker(out, kImStart);
  std::string &text = out.text;
  text.append("system\n");
  if (system != nullptr)
    text.append(system->content).append("\n\n");
  text.append("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
              "You are provided with function signatures within <tools></tools> XML tags:\n"
              "<tools>");
  for (const std::string &tool : tools)
    text.append("\n").append(tool);
  text.append("\n</tools>\n\nFor each function call, return a json object with function name and "
              "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
              "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>");
  append_marker(out, kImEnd);
  text.append("\n");
}

// With tools, their system turn (holding a leading system message); returns
// the index of the first message still to render.
size_t append_tools_if_any(ChatPrompt &out, std::span<const ChatMessage> messages,
                           const std::vector<std::string> &tools) {
  if (tools.empty())
    return 0;
  const bool system = !messages.empty() && messages[0].role == "system";
  append_tools_turn(out, tools, system ? &messages[0] : nullptr);
  return system ? 1 : 0;
}

// An assistant turn's calls; a newline before each but a first one that
// follows no content.
void append_tool_calls(std::string &text, const ChatMessage &m, bool after_content) {
  for (size_t k = 0; k < m.tool_calls.size(); ++k) {
    if (k > 0 || after_content)
      text.append("\n");
    text.append("<tool_call>\n{\"name\": \"").append(m.tool_calls[k].name);
    text.append("\", \"arguments\": ").append(m.tool_calls[k].arguments).append("}\n</tool_call>");
  }
}

void append_assistant(ChatPrompt &out, const ChatMessage &m, bool keep_reasoning, bool is_last) {
  const AssistantParts parts = split_reasoning(m.content);
  append_marker(out, kImStart);
  std::string &text = out.text;
  text.append("assistant\n");
  if (keep_reasoning && (is_last || !parts.reasoning.empty())) {
    text.append(kThinkOpen).append("\n");
    text.append(rstrip_newlines(lstrip_newlines(parts.reasoning)));
    text.append("\n").append(kThinkClose).append("\n\n");
    text.append(lstrip_newlines(parts.content));
  } else {
    text.append(parts.content); // history before the last query: reasoning dropped
  }
  append_tool_calls(text, m, !parts.content.empty());
  append_marker(out, kImEnd);
  text.append("\n");
}

// Consecutive tool results share one user turn.
void append_tool(ChatPrompt &out, std::span<const ChatMessage> messages, size_t i) {
  if (i == 0 || messages[i - 1].role != "tool") {
    append_marker(out, kImStart);
    out.text.append("user");
  }
  out.text.append("\n<tool_response>\n").append(messages[i].content).append("\n</tool_response>");
  if (i + 1 == messages.size() || messages[i + 1].role != "tool") {
    append_marker(out, kImEnd);
    out.text.append("\n");
  }
}

void append_generation_prompt(ChatPrompt &out, bool thinking) {
  append_marker(out, kImStart);
  out.text.append("assistant\n");
  if (!thinking)
    out.text.append(kThinkOpen).append("\n\n").append(kThinkClose).append("\n\n");
}

ChatPrompt render_qwen3(std::span<const ChatMessage> messages, const ChatOptions &options) {
  ChatPrompt out;
  const size_t last_query = last_query_index(messages);
  const size_t first = append_tools_if_any(out, messages, options.tools);
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage &m = messages[i];
    if (m.role == "system" || m.role == "user") {
      append_turn(out, m.role, m.content);
    } else if (m.role == "assistant") {
      append_assistant(out, m, i > last_query, i + 1 == messages.size());
    } else if (m.role == "tool") {
      append_tool(out, messages, i);
    } else {
      throw Error("chat template: unsupported message role '" + m.role +
                  "' (Qwen3 knows system, user, assistant and tool)");
    }
  }
  if (options.add_generation_prompt)
    append_generation_prompt(out, options.enable_thinking);
  return out;
}

ChatPrompt render_chatml(std::span<const ChatMessage> messages, const ChatOptions &options) {
  ChatPrompt out;
  const size_t first = append_tools_if_any(out, messages, options.tools);
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage &m = messages[i];
    if (m.role == "tool") { // results go back as Qwen3 writes them
      append_tool(out, messages, i);
      continue;
    }
    if (m.tool_calls.empty()) {
      append_turn(out, m.role, m.content);
      continue;
    }
    append_marker(out, kImStart);
    out.text.append(m.role).append("\n").append(m.content);
    append_tool_calls(out.text, m, !m.content.empty());
    append_marker(out, kImEnd);
    out.text.append("\n");
  }
  if (options.add_generation_prompt)
    append_generation_prompt(out, /*thinking=*/true);
  return out;
}

} // namespace

ChatTemplateKind detect_chat_template(std::string_view text, const ChatWarningSink &warn) {
  const auto fallback = [&](std::string_view why) {
    if (warn)
      warn(std::string(why) + "; formatting prompts as plain ChatML, which may not match what "
                              "the model was trained on");
    return ChatTemplateKind::ChatMLFallback;
  };
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return fallback("the model has no chat template (tokenizer.chat_template)");
  const bool chatml = contains(text, kImStart) && contains(text, kImEnd);
  const bool thinking = contains(text, kThinkOpen) || contains(text, kThinkClose);
  if (chatml && thinking)
    return ChatTemplateKind::Qwen3ChatML;
  if (chatml)
    return fallback("the chat template is ChatML without Qwen3's <think> handling");
  return fallback("the chat template is not a ChatML template this runtime recognises");
}

ChatPrompt render_chat_prompt(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                              const ChatOptions &options) {
  switch (kind) {
  case ChatTemplateKind::Qwen3ChatML:
    return render_qwen3(messages, options);
  case ChatTemplateKind::ChatMLFallback:
    return render_chatml(messages, options);
  }
  throw Error("chat template: unknown template kind");
}

std::string apply_chat_template(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                                const ChatOptions &options) {
  return render_chat_prompt(kind, messages, options).text;
}

} // namespace bonsai
