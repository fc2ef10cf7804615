#pragma once
// Helpers for the tests of the Responses, Messages and Ollama APIs: named
// server-sent events, NDJSON lines, and POSTs with extra headers.
#include <string>
#include <utility>
#include <vector>

#include "server_test_support.hpp"

namespace server_test {

// What the scripted plugin's model replies in these tests: a think block
// and an answer, or one tool call.
inline const std::string kThinkThenText =
    "<think>I need the weather.</think>\n\nIt is sunny.<|im_end|>";
inline const std::string kToolCall = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                     "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>";
// The arguments' schema of the get_weather tool, which each API describes
// in its own shape.
inline const json kWeatherParameters = {
    {"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}};

// One server-sent event: its "event:" name ("" when none) and its data.
struct NamedEvent {
  std::string name;
  json data;
};

// The events of a stream, in order; data that is not JSON is kept as a string.
inline std::vector<NamedEvent> named_events(const std::string &stream) {
  std::vector<NamedEvent> out;
  size_t at = 0;
  while (at < stream.size()) {
    size_t end = stream.find("\n\n", at);
    if (end == std::string::npos)
      end = stream.size();
    NamedEvent event;
    std::string data;
    size_t line = at;
    while (line < end) {
      size_t stop = stream.find('\n', line);
      if (stop == std::string::npos || stop > end)
        stop = end;
      const std::string text = stream.substr(line, stop - line);
      if (text.rfind("event: ", 0) == 0)
        event.name = text.substr(7);
      else if (text.rfind("data: ", 0) == 0)
        data += text.substr(6);
      line = stop + 1;
    }
    if (!data.empty() || !event.name.empty()) {
      event.data = json::parse(data, nullptr, false);
      if (event.data.is_discarded())
        event.data = data;
      out.push_back(std::move(event));
    }
    at = end + 2;
  }
  return out;
}

// The JSON objects of an NDJSON body, one a line.
inline std::vector<json> ndjson_lines(const std::string &body) {
  std::vector<json> out;
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find('\n', at);
    if (end == std::string::npos)
      end = body.size();
    if (end > at)
      out.push_back(json::parse(body.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

// The conversation the translation tests send in each API's shape, as a Chat
// Completions request: a system message, a question, an assistant turn with
// `content` (a string or null), its `reasoning` (none when empty) and a
// get_weather call for Paris, the call's result and a second question;
// greedy, 8 tokens, the tool offered.
inline json translated_chat(const json &content, const std::string &reasoning) {
  json assistant = {
      {"role", "assistant"},
      {"content", content},
      {"tool_calls",
       {{{"id", "call_1"},
         {"type", "function"},
         {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}};
  if (!reasoning.empty())
    assistant["reasoning_content"] = reasoning;
  return {{"max_tokens", 8},
          {"temperature", 0},
          {"tools",
           {{{"type", "function"},
             {"function",
              {{"name", "get_weather"},
               {"description", "Current weather in a city"},
               {"parameters", kWeatherParameters}}}}}},
          {"messages",
           {{{"role", "system"}, {"content", "You are terse."}},
            {{"role", "user"}, {"content", "Weather in Paris?"}},
            assistant,
            {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18C"}},
            {{"role", "user"}, {"content", "And tomorrow?"}}}}};
}

// A server on which two APIs' replies to the same prompt are compared: one
// slot and no shared prefixes, so that each request reads its whole prompt
// in the same steps, and equal prompts give equal greedy replies on the fast
// kernels too.
inline bonsai::server::ServerOptions comparing_options() {
  bonsai::server::ServerOptions options = server_options(1);
  options.cache_isolation = bonsai::server::CacheIsolation::request;
  return options;
}

// POSTs `body` to `path` with `headers` (status -1 when the request failed).
inline httplib::Response post_with(int port, const std::string &path, const json &body,
                                   const httplib::Headers &headers = {}) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(120, 0);
  auto result = client.Post(path.c_str(), headers, body.dump(), "application/json");
  if (!result) {
    httplib::Response failed;
    failed.status = -1;
    return failed;
  }
  return result.value();
}

// tiny-q1's tokens of `text` (control-token text becomes control tokens).
inline size_t token_count(const std::string &text) {
  return open_tiny(64).tokenize(text, true).size();
}

} // namespace server_test
