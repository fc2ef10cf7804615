#pragma once
// Shared fixtures for the host tests: golden data, plugin paths, env guard.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mini_json.hpp"

#include "sanitize_utf8.hpp"

namespace host_test {

inline std::string data_path(const std::string &name) {
  return std::string(BONSAI_TEST_DATA_DIR) + "/" + name;
}
inline std::string tiny_q1() {
  return data_path("tiny-q1.gguf");
}

inline std::string fake_dir() {
  return BONSAI_FAKE_PLUGIN_DIR;
}
inline std::string fake_plugin(const std::string &stem) {
  return fake_dir() + "/libbonsai_" + stem + ".so";
}
// The real CPU plugin in the build tree.
inline std::string cpu_plugin() {
  return std::string(BONSAI_PLUGIN_DIR) + "/libbonsai_cpu.so";
}

// tiny-q1 on the scripted fake plugin: its "model" replies the token list
// of $BONSAI_FAKE_SCRIPT ("id,id,...", read when a session's context is
// made) to any prompt.
inline bonsai::Engine scripted_engine() {
  bonsai::EngineOptions options;
  options.backend = fake_plugin("scripted");
  options.n_ctx = 64;
  return bonsai::Engine::open(tiny_q1(), options);
}
// A session of it that replies `script`.
inline bonsai::Session scripted_session(const bonsai::Engine &engine, const char *script) {
  setenv("BONSAI_FAKE_SCRIPT", script, 1);
  auto session = engine.create_session();
  unsetenv("BONSAI_FAKE_SCRIPT");
  return session;
}

// The CPU plugin with its exact kernels (the golden greedy tokens hold).
inline bonsai::EngineOptions cpu_options(int32_t n_ctx = 64) {
  bonsai::EngineOptions options;
  options.backend = cpu_plugin();
  options.n_ctx = n_ctx;
  options.n_threads = 2;
  options.plugin_options = "kernels=reference";
  return options;
}

// A greedy request for n tokens after `prompt`, with no stop token (a reply
// of exactly n tokens, comparable token by token).
inline bonsai::GenerateRequest greedy_request(std::vector<int32_t> prompt, int32_t n) {
  bonsai::GenerateRequest request;
  request.prompt_tokens = std::move(prompt);
  request.n_predict = n;
  request.sampling.temperature = 0.0f;
  request.stop_tokens.emplace();
  return request;
}

struct Greedy {
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;
};
inline Greedy load_greedy(const std::string &name) {
  const auto doc = mini_json::parse_file(data_path(name));
  Greedy g;
  for (const auto &id : doc["prompt"].as_array())
    g.prompt.push_back(static_cast<int32_t>(id.as_int()));
  for (const auto &id : doc["greedy"].as_array())
    g.greedy.push_back(static_cast<int32_t>(id.as_int()));
  return g;
}

inline std::vector<int32_t> load_prompt(const std::string &name) {
  const auto doc = mini_json::parse_file(data_path(name));
  std::vector<int32_t> ids;
  for (const auto &id : doc["tokens"].as_array())
    ids.push_back(static_cast<int32_t>(id.as_int()));
  return ids;
}

inline std::vector<float> load_f32(const std::string &name) {
  std::ifstream in(data_path(name), std::ios::binary | std::ios::ate);
  const auto size = static_cast<size_t>(in.tellg());
  std::vector<float> values(size / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char *>(values.data()), static_cast<std::streamsize>(size));
  return values;
}

inline double cosine(const float *a, const float *b, size_t n) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < n; ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

using test_support::sanitize_utf8;

// Sets an environment variable for the lifetime of the guard.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name_;
  std::optional<std::string> old_;
};

} // namespace host_test
