#pragma once
// A bonsai serve whose model replies a fixed token script to any prompt: the
// "scripted" fake plugin (tests/fake_plugins) over tiny-q1.gguf. What the
// server makes of a known reply (reasoning, tool calls) is then checked
// exactly.
#include <cstdlib>
#include <string>

#include "server_test_support.hpp"

namespace server_test {

// tiny-q1's token ids of `text` (control-token text becomes control tokens),
// comma-separated, as $BONSAI_FAKE_SCRIPT takes them.
inline std::string script_of(const std::string &text) {
  const bonsai::Engine engine = open_tiny(64);
  std::string ids;
  for (int32_t id : engine.tokenize(text, true)) {
    if (!ids.empty())
      ids += ',';
    ids += std::to_string(id);
  }
  return ids;
}

struct ScriptedServer {
  explicit ScriptedServer(const std::string &script_ids) {
    setenv("BONSAI_FAKE_SCRIPT", script_ids.c_str(), 1);
    server = std::make_unique<bonsai::server::Server>(server_options(2), [] {
      bonsai::EngineOptions options = engine_options(512);
      options.backend = std::string(BONSAI_FAKE_PLUGIN_DIR) + "/libbonsai_scripted.so";
      options.plugin_options.clear();
      return bonsai::Engine::open(data_path("tiny-q1.gguf"), options);
    });
    server->wait_loaded();
    EXPECT_TRUE(server->ready()) << server->load_error();
  }
  ~ScriptedServer() { unsetenv("BONSAI_FAKE_SCRIPT"); }
  ScriptedServer(const ScriptedServer &) = delete;
  ScriptedServer &operator=(const ScriptedServer &) = delete;

  // POST /v1/chat/completions with one user message and `extra` fields.
  httplib::Response chat(const json &extra = json::object(),
                         const json &messages = {{{"role", "user"}, {"content", "Hi"}}}) const {
    json body = {{"messages", messages}};
    body.update(extra);
    return post_json(server->port(), "/v1/chat/completions", body, 60);
  }

  std::unique_ptr<bonsai::server::Server> server;
};

} // namespace server_test
